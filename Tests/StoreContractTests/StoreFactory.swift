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
    })
}
