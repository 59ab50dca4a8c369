import CSQLite
import Foundation

/// Which packs' documents a transaction touched, as SQLite itself reports it: an update hook on
/// the writer's connection notes the rowid of every row inserted, updated or deleted in the
/// tables a pack document is read from (`documentTables`), where the rowid is the pack's id.
/// Nothing has to remember which code writes which pack — a batch of one pack's tiles that also
/// adjusts another pack's progress row names both, because the row changed.
///
/// The hook does not see everything (SQLite's `sqlite3_update_hook` contract): rows deleted by
/// the truncate optimisation (`DELETE FROM t` without `WHERE`), by `REPLACE` conflict resolution
/// on another unique key, or by foreign-key actions. So it is trusted only for batches (rows
/// and the operations riding them, which delete nothing whole); `WriterThread.perform`
/// operations (state changes, deletions, imports, a storage reset) count as touching every pack.
/// Writer thread only, from `init` on; one update hook per connection, and this is it.
final class PackRowChanges {
    /// The tables `PackRecord.selectSQL` and `ProgressQueries.stored` read, each keyed by the pack
    /// id (`regions.id`; `pack_id` or `region_id` as `INTEGER PRIMARY KEY` in the others).
    /// `PackRowChangesTests` checks with SQLite's authorizer that the document's queries read no
    /// other table.
    static let documentTables = ["packd_progress", "packd_packs", "regions", "packd_invalidations"]

    /// `documentTables` as C strings, made once: `rowChanged` compares each changed row's table
    /// with them, and a Swift string passed to `strcmp` is bridged on every call (~300 ns against
    /// ~25 ns). Freed in `deinit`.
    private let tableNames: [UnsafeMutablePointer<CChar>] = PackRowChanges.documentTables.map { strdup($0)! }
    /// Packs whose document rows changed since `take()`.
    private var packs: Set<Int64> = []
    private let database: Database

    init(database: Database) {
        self.database = database
        sqlite3_update_hook(database.handle, { context, _, _, table, rowid in
            guard let context, let table else { return }
            let changes = Unmanaged<PackRowChanges>.fromOpaque(context).takeUnretainedValue()
            changes.rowChanged(table: table, rowid: rowid)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if database.isOpen { sqlite3_update_hook(database.handle, nil, nil) }
        for name in tableNames { free(name) }
    }

    /// The packs noted since the last call, and forgets them.
    func take() -> Set<Int64> {
        defer { packs.removeAll(keepingCapacity: true) }
        return packs
    }

    /// Called for every row a statement changes (each tile's too), so no string is made.
    private func rowChanged(table: UnsafePointer<CChar>, rowid: sqlite3_int64) {
        if tableNames.contains(where: { strcmp(table, $0) == 0 }) {
            packs.insert(rowid)
        }
    }
}
