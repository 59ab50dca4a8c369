/// Why an export failed, in terms the API maps to a status: the pack or its tiles are missing
/// (404/409), the request is ambiguous (400 naming the choices), or the store or disk failed
/// (500/507).
public enum ExportError: Error, CustomStringConvertible, Sendable {
    case packNotFound(Int64)
    /// The pack holds no stored tiles for the chosen source (nothing to put in an archive).
    case noTiles
    /// MBTiles and PMTiles hold one tileset: the pack has several and none was chosen.
    case ambiguousTileSource([PackTileSource])
    case unknownTileSource(String)
    /// A stored tile cannot be decoded (bad zlib, or coordinates outside its zoom's grid).
    case invalidTile(z: Int64, x: Int64, y: Int64, reason: String)
    case database(DatabaseError)
    case file(String)

    public var description: String {
        switch self {
        case .packNotFound(let id): return "pack \(id) does not exist"
        case .noTiles: return "the pack has no stored tiles for this source"
        case .ambiguousTileSource(let sources):
            return "the pack has \(sources.count) tile sources; choose one of: "
                + sources.map { "\($0.urlTemplate) @\($0.pixelRatio)x" }.joined(separator: ", ")
        case .unknownTileSource(let template): return "the pack has no tiles from \(template)"
        case .invalidTile(let z, let x, let y, let reason): return "stored tile \(z)/\(x)/\(y) is invalid: \(reason)"
        case .database(let error): return error.description
        case .file(let message): return message
        }
    }
}

extension ExportError {
    /// Runs `body`, mapping whatever it throws to an `ExportError` (SQLite failures to
    /// `.database`, file failures to `.file`).
    static func mapping<R>(_ body: () throws -> R) throws(ExportError) -> R {
        do {
            return try body()
        } catch let error as ExportError {
            throw error
        } catch let error as DatabaseError {
            throw .database(error)
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
