import Foundation
import Packs
import Server
import Store

/// The steps of `POST /v1/imports` once the upload is on disk: check the untrusted file on a
/// pool thread, count and merge it on the writer (one operation, so the counts describe exactly
/// this merge), then read back the packs it added or updated.
enum ImportJob {
    struct Merged: Sendable {
        let packs: [OfflineDatabaseImport.ImportedPack]
        let preview: ImportPreview
    }

    static func check(_ path: String, settings: SharingSettings) -> Result<ValidatedImport, ImportError> {
        Result { () throws(ImportError) in
            try ValidatedImport.check(path: path, limits: settings.importLimits, scratchDirectory: settings.scratchDirectory)
        }
    }

    /// On the writer thread.
    static func merge(_ upload: ValidatedImport, into database: OfflineDatabase) throws -> Merged {
        let preview = try ImportPreview.of(upload, in: database.database)
        let packs = try database.importOfflineDatabase(upload)
        return Merged(packs: packs, preview: preview)
    }

    /// A pack the import added or changed, as its events show it.
    struct Changed: Sendable {
        let record: PackRecord
        let progress: StoredProgress
        let added: Bool
    }

    /// The `ImportResult` body and the packs it lists. On a pool thread with a reader.
    static func result(_ merged: Merged, reader: StoreReader) throws -> (body: [UInt8], changed: [Changed]) {
        var added: [Any] = [], updated: [Any] = []
        var changed: [Changed] = []
        for pack in merged.packs where pack.added || !merged.preview.unchangedPacks.contains(pack.id) {
            guard let record = try reader.pack(pack.id) else { continue }
            let progress = try reader.progress(pack.id) ?? StoredProgress()
            let document = PackDocument(pack: record, progress: progress)
            guard let object = try? JSONSerialization.jsonObject(with: Data(document.body)) else { continue }
            if pack.added { added.append(object) } else { updated.append(object) }
            changed.append(Changed(record: record, progress: progress, added: pack.added))
        }
        let body = JSONBody.encode([
            "added": added, "updated": updated, "skipped_regions": merged.preview.unchangedRegions,
            "resources": merged.preview.resources, "tiles": merged.preview.tiles,
        ] as [String: Any])
        return (body, changed)
    }

    /// The answer to a refused upload: every case but a store or disk failure is the client's.
    static func problem(_ error: ImportError) -> Problem? {
        switch error {
        case .tooLarge: return Problem(.payloadTooLarge, detail: error.description)
        case .tileLimitExceeded: return Problem(.tileLimitExceeded, detail: error.description)
        case .database, .file: return nil
        default:
            return Problem(.validationFailed, detail: error.description,
                           errors: [Problem.FieldError(pointer: "", detail: error.description)])
        }
    }
}
