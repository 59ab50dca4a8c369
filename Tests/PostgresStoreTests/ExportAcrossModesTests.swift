import Fetch
import Foundation
import Jobs
import Loop
import PackdTestSupport
import Packs
import Postgres
import PostgresStore
import PostgresTestSupport
import Store
import Testing

/// The same download, run by Jobs' engine once into SQLite mode's store and once into cluster
/// mode's (same upstream, same fixed clock): every export format comes out byte for byte the
/// same, and an upload of SQLite mode's MapLibre export merged into PostgreSQL exports as itself.
@Suite(.serialized) struct ExportAcrossModesTests {
    static let clock = WallClock.fixed(1_800_000_000)

    @Test func aDownloadExportsTheSameBytesInBothModes() throws {
        let upstream = try TileServerUpstream()
        let definition = #"{"style_url":"\#(upstream.styleURL)","bounds":[0.0,0.0,60.0,97.5],"min_zoom":0.0,"max_zoom":7.0,"pixel_ratio":1.0}"#
        let sqlitePath = NSTemporaryDirectory() + "packd-modes-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: sqlitePath + suffix) } }
        let url = try TemporaryPostgres.shared().makeDatabase(prefix: "modes")
        defer { try? TemporaryPostgres.shared().dropDatabase(url) }

        let sqlite = try ModeRun(definition: definition) { loop in
            try SQLiteStore(path: sqlitePath, loop: loop, configuration: .init(clock: Self.clock))
        }
        let postgres = try ModeRun(definition: definition) { loop in
            try PostgresStore(url: url, loop: loop, nodeName: "modes", clock: Self.clock)
        }
        #expect(sqlite.tiles > 1_000 && sqlite.tiles == postgres.tiles)
        for format in ["maplibre", "mbtiles", "pmtiles"] {
            let (a, b) = (try #require(sqlite.exports[format]), try #require(postgres.exports[format]))
            #expect(!a.isEmpty && a == b, "\(format): \(a.count) bytes from SQLite, \(b.count) from PostgreSQL")
        }

        // SQLite mode's export, uploaded to cluster mode, merges into a new pack that exports as itself.
        let upload = NSTemporaryDirectory() + "packd-modes-upload-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: upload) }
        try Data(try #require(sqlite.exports["maplibre"])).write(to: URL(fileURLWithPath: upload))
        let imported = try TemporaryPostgres.shared().makeDatabase(prefix: "imported")
        defer { try? TemporaryPostgres.shared().dropDatabase(imported) }
        let thread = try LoopThread(name: "import")
        defer { thread.shutdown() }
        let store = try PostgresStore(url: imported, loop: thread.loop, nodeName: "import", clock: Self.clock)
        defer { store.close() }
        let checked = try store.checkUpload(path: upload, limits: UploadLimits(), scratchDirectory: NSTemporaryDirectory()).get()
        let outcome = try blocking(on: thread) { done in store.write({ try $0.importUpload(checked) }, then: done) }
        #expect(outcome.packs == [ImportOutcome.ImportedPack(id: 1, added: true)])
        #expect(outcome.tiles == Int64(sqlite.tiles) && outcome.resources == 2)
        let progress = try blocking(on: thread) { done in store.read({ try $0.progress(1) }, then: done) }
        #expect(progress?.completedTiles == Int64(sqlite.tiles) && progress?.completedResources == Int64(sqlite.tiles) + 2)
        let again = NSTemporaryDirectory() + "packd-modes-again-\(UUID().uuidString).db"
        defer { try? FileManager.default.removeItem(atPath: again) }
        // Imported packs wait `inactive` at version 0: what they hold, with the import's time
        // (the fixed clock's, as the version's time in the exported file).
        _ = try blocking(on: thread) { done in
            store.read({ try $0.export(PackExportRequest(pack: 1, version: nil), to: again) }, then: done)
        }
        #expect(Array(try Data(contentsOf: URL(fileURLWithPath: again))) == sqlite.exports["maplibre"],
                "an imported pack exports as the file it came from")
        // The same upload again brings nothing new: it is recognised as the same pack.
        let repeated = try blocking(on: thread) { done in store.write({ try $0.importUpload(checked) }, then: done) }
        #expect(repeated.packs == [ImportOutcome.ImportedPack(id: 1, added: false)] && repeated.tiles == 0
                && repeated.unchangedPacks == [1])
    }
}

/// One download of `definition` by a `PackScheduler` into the store `open` makes, then its exports.
private struct ModeRun {
    var tiles = 0
    var exports: [String: [UInt8]] = [:]

    init(definition: String, open: (EventLoop) throws -> any PackStore) throws {
        let thread = try LoopThread(name: "modes")
        defer { thread.shutdown() }
        let store = try open(thread.loop)
        defer { store.close() }
        let clock = ExportAcrossModesTests.clock
        nonisolated(unsafe) var fetcher: Fetcher!
        nonisolated(unsafe) var scheduler: PackScheduler!
        let activity = UnheardActivity()
        try thread.sync {
            fetcher = try Fetcher(loop: thread.loop, configuration: FetchConfiguration(addressPolicy: .loopbackForTests))
            scheduler = PackScheduler(loop: thread.loop, fetcher: fetcher, store: store, listener: activity, clock: clock)
        }
        defer { withExtendedLifetime(activity) {} }
        defer { try? thread.sync { scheduler.shutdown(); fetcher.shutdown() } }
        let record = PackRecord(name: "modes", state: .queued, definition: definition)
        let id = try blocking(on: thread) { done in store.write({ try $0.createPack(record, now: clock.now) }, then: done) }
        try thread.sync { scheduler.packQueued(id) }
        var state: PackState?
        #expect(eventually(within: 120) {
            state = try? blocking(on: thread) { done in store.read({ try $0.pack(id)?.state }, then: done) }
            return state == .complete || state == .failed
        })
        let error = try? blocking(on: thread) { done in store.read({ try $0.pack(id)?.error }, then: done) }
        try #require(state == .complete, "\(String(describing: error))")
        tiles = Int(try blocking(on: thread) { done in store.read({ try $0.progress(id)?.completedTiles ?? 0 }, then: done) })
        let directory = NSTemporaryDirectory() + "packd-modes-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let version = try blocking(on: thread) { done in store.read({ try $0.pack(id)?.version }, then: done) }
        #expect(version == 1)
        for format in PackExportRequest.Format.allCases {
            _ = try blocking(on: thread) { done in
                store.read({ reader in
                    try reader.export(PackExportRequest(pack: id, version: 1, format: format), to: directory + "/" + format.rawValue)
                }, then: done)
            }
        }
        for format in ["maplibre", "mbtiles", "pmtiles"] {
            exports[format] = Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/" + format)))
        }
    }
}

/// Starts `work` on the loop thread (stores are called there) and waits for its result.
func blocking<T>(on thread: LoopThread, _ work: @escaping (@escaping (Result<T, any Error>) -> Void) -> Void) throws -> T {
    let done = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var outcome: Result<T, any Error>?
    try thread.sync {
        work { result in
            outcome = result
            done.signal()
        }
    }
    guard done.wait(timeout: .now() + 120) == .success, let outcome else { throw TimedOut() }
    return try outcome.get()
}

struct TimedOut: Error {}

/// A listener to the engine that nobody reads: the runs here look at the store only.
private final class UnheardActivity: PackActivityListener, @unchecked Sendable {
    func packTransitioned(_ packID: Int64, _ transition: PackLifecycle.Transition) {}
    func progressCommitted(_ packID: Int64, _ progress: StoredProgress, expected: ExpectedCounts?) {}
    func revalidationCommitted(_ packID: Int64, _ counts: PackInvalidation, progress: StoredProgress, expected: ExpectedCounts) {}
    func resourceFailed(_ failure: ResourceErrorEvent) {}
    func startAreaReady(_ packID: Int64, _ startArea: StartArea, at time: Int64) {}
}
