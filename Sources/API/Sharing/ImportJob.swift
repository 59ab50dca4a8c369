import Events
import Foundation
import Packs
import Server

/// The answers of `POST /v1/imports` once the store merged the upload: the packs it added or
/// updated, read back, and the problem for a refused upload.
enum ImportJob {

    /// The `ImportResult` body and the packs it lists. On a pool thread with a reader.
    static func result(_ merged: ImportOutcome, reader: any StoreReading & PackExporting) throws -> (body: [UInt8], changed: [ImportedPack]) {
        var added: [Any] = [], updated: [Any] = []
        var changed: [ImportedPack] = []
        for pack in merged.packs where pack.added || !merged.unchangedPacks.contains(pack.id) {
            guard let record = try reader.pack(pack.id) else { continue }
            let progress = try reader.progress(pack.id) ?? StoredProgress()
            let document = PackDocument(pack: record, progress: progress)
            guard let object = try? JSONSerialization.jsonObject(with: Data(document.body)) else { continue }
            if pack.added { added.append(object) } else { updated.append(object) }
            changed.append(ImportedPack(record: record, progress: progress, added: pack.added))
        }
        let body = JSONBody.encode([
            "added": added, "updated": updated, "skipped_regions": merged.unchangedRegions,
            "resources": merged.resources, "tiles": merged.tiles,
        ] as [String: Any])
        return (body, changed)
    }

    /// The answer to a refused upload: every case but a store or disk failure is the client's.
    static func problem(_ error: ImportError) -> Problem? {
        switch error {
        case .tooLarge: return Problem(.payloadTooLarge, detail: error.description)
        case .tileLimitExceeded: return Problem(.tileLimitExceeded, detail: error.description)
        case .store, .file: return nil
        case .invalidRegions(let problems):
            return Problem(.validationFailed, detail: error.description,
                           errors: problems.map { Problem.FieldError(pointer: $0.pointer, detail: $0.detail) })
        default:
            return Problem(.validationFailed, detail: error.description,
                           errors: [Problem.FieldError(pointer: "", detail: error.description)])
        }
    }
}
