import Foundation
import Packs

/// Imports through the writer: call from `WriterThread.perform` so the merge is one more write of
/// the single writer, e.g.
/// `writer.perform({ try $0.importOfflineDatabase(upload, now: now) }, completion: …)`.
extension OfflineDatabase {
    /// Merges a validated upload (see `ValidatedImport.check`, which can run on any thread) and
    /// re-bases the maintained ambient size, since the merge may link rows that were ambient.
    public func importOfflineDatabase(_ upload: ValidatedImport,
                                      now: Int64? = nil) throws(ImportError) -> [ImportOutcome.ImportedPack] {
        let packs = try OfflineDatabaseImport.merge(upload, into: database, tileLimit: linkedTileLimit, now: now ?? clock.now)
        do {
            try resynchronizeAmbientCacheSize()
        } catch let error as DatabaseError {
            throw .store(error.storeError)
        } catch {
            throw .file("\(error)")
        }
        return packs
    }
}
