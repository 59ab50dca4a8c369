import Packs
extension ExportError {
    /// Runs `body`, mapping whatever it throws to an `ExportError` (SQLite failures to
    /// `.database`, file failures to `.file`).
    static func mapping<R>(_ body: () throws -> R) throws(ExportError) -> R {
        do {
            return try body()
        } catch let error as ExportError {
            throw error
        } catch let error as DatabaseError {
            throw .store(error.storeError)
        } catch {
            throw .file("\(error)")
        }
    }

    /// Runs `body` in one read transaction on `database`, so an export is a snapshot of the pack
    /// even while the writer commits batches (WAL readers see the database as of BEGIN).
    ///
    /// The pack is memory-mapped meanwhile: an export reads every body once, and through
    /// `pread` each 4 KiB page cost a system call and a kernel copy (a seventh of an export's
    /// CPU). The caller's setting is restored afterwards.
    static func inReadTransaction<R>(_ database: Database, _ body: () throws(ExportError) -> R) throws(ExportError) -> R {
        try mapping {
            let previous = try database.scalarInt("PRAGMA mmap_size") ?? 0
            try database.execute("PRAGMA mmap_size = \(Self.readMapSize)")
            defer { try? database.execute("PRAGMA mmap_size = \(previous)") }
            return try database.transaction(.deferred) { try body() }
        }
    }

    /// SQLite caps it at its compile-time limit (2 GiB by default); address space, not memory.
    static let readMapSize: Int64 = 1 << 40
}
