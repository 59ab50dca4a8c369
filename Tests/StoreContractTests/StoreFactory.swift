import Foundation
import Loop
import Packs
import Store
import Testing

/// How the writer batches, for the tests that count batches.
struct BatchSettings: Sendable {
    var maximumCount = 256
    var maximumDelay: Duration = .milliseconds(20)
}

/// One store implementation as the contract suite opens it. Every test of the suite runs against
/// every factory in `StoreFactory.all`: a second implementation adds its factory there and
/// passes the same tests, never a copy of them.
struct StoreFactory: Sendable, CustomTestStringConvertible {
    let name: String
    /// Opens a new, empty store on `loop` (or reopens `existing`, what an earlier `open` returned).
    let open: @Sendable (_ loop: EventLoop, _ existing: String?, _ batches: BatchSettings) throws -> (store: any PackStore, location: String)
    /// Removes what `open` created.
    let remove: @Sendable (_ location: String) -> Void
    /// Runs `operation` on the store's writer as an operation that promised to change no pack's
    /// document (`BatchingWriter.perform(changesPacks: false)`, which `PackStore` does not offer);
    /// `done` on the writer thread.
    let performPromisingNoChange: @Sendable (_ store: any PackStore, _ operation: @escaping @Sendable (any StoreWriting) throws -> Void,
                                             _ done: @escaping @Sendable () -> Void) -> Void
    /// Makes the store's storage refuse new tile rows as a full disk does (`full`), or room again;
    /// run on the store's writer (`PackStore.write`).
    let fillStorage: @Sendable (_ writer: any StoreWriting, _ full: Bool) throws -> Void

    var testDescription: String { name }

    static let all: [StoreFactory] = [.sqlite, .postgres]

    /// The embedded default: a SQLite file in a temporary directory.
    static let sqlite = StoreFactory(name: "SQLite", open: { loop, existing, batches in
        let path = existing ?? NSTemporaryDirectory() + "packd-contract-\(UUID().uuidString).sqlite"
        let store = try SQLiteStore(path: path, loop: loop, configuration: .init(
            maximumBatchCount: batches.maximumCount, maximumBatchDelay: batches.maximumDelay))
        return (store, path)
    }, remove: { path in
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }, performPromisingNoChange: { store, operation, done in
        (store as! SQLiteStore).writer.perform({ try operation($0) }, changesPacks: false) { _ in done() }
    }, fillStorage: { writer, full in
        // SQLITE_FULL, as a full disk gives it: the file may not grow past the pages it has.
        let database = (writer as! OfflineDatabase).database
        let pages = try database.scalarInt("PRAGMA page_count") ?? 0
        try database.execute("PRAGMA max_page_count = \(full ? pages : 1 << 30)")
    })
}
