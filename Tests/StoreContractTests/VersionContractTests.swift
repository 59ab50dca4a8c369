import Foundation
import Packs
import Store
import Testing

/// The store contract, pack versions: when versions are cut and what they count, what a
/// versioned export holds and that it is the same file every time — from either store.
@Suite struct VersionContractTests {
    @Test(arguments: StoreFactory.all)
    func aVersionIsCutWhenContentChangedAndOnlyThen(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let pack = try VersionScript.createPack(store, "versions")
        #expect(try store.read { try $0.pack(pack) }?.version == 0)
        #expect(try store.read { try $0.versions(of: pack) }.isEmpty)

        let first = try VersionScript.download(store, pack, tiles: 6, now: 1_000)
        let one = try #require(first.first)
        #expect(first.count == 1 && one.packID == pack && one.version == 1 && one.createdAt == 1_000)
        #expect(one.resources == 7 && one.tiles == 6 && one.bytes == 6 * 300 + 2)
        #expect(one.changedResources == 7 && one.changedBytes == one.bytes && one.removedResources == 0)
        #expect(try store.read { try $0.pack(pack) }?.version == 1)
        #expect(try store.read { try $0.versions(of: pack) } == [one])

        // A refresh where everything answered 304, or 200 with the same bytes: no version.
        let unchanged = try VersionScript.refresh(store, pack, now: 1_000, writes: (0..<6).map { x in
            ResourceWrite(key: VersionScript.tileKey(x), content: x % 2 == 0 ? .notModified : .unchangedBody,
                          cache: HTTPCacheHeaders(expires: 9_999 + x, modified: 5, etag: "\"e\(x)\""), packID: pack)
        } + [ResourceWrite(key: VersionScript.styleKey, content: .unchangedBody, cache: HTTPCacheHeaders(etag: "\"s\""), packID: pack)])
        #expect(unchanged.isEmpty)
        #expect(try store.read { try $0.pack(pack) }?.version == 1)

        // A tile replaced, a tile gone (404), the style replaced: version 2, in the same second.
        let second = try VersionScript.refresh(store, pack, now: 1_000, writes: [
            ContractRows.tile(z: 3, x: 0, y: 0, pack: pack, size: 500),
            ResourceWrite(key: VersionScript.tileKey(1), content: .noContent, packID: pack),
            ContractRows.resource(VersionScript.styleURL, pack: pack, text: "{\"version\":8}"),
        ])
        let two = try #require(second.first)
        #expect(second.count == 1 && two.version == 2)
        #expect(two.createdAt == 1_001, "a version's time is after the one before, or an export could not replace its rows")
        #expect(two.changedResources == 2 && two.changedBytes == 500 + 13 && two.removedResources == 1)
        #expect(two.resources == 7 && two.tiles == 6 && two.bytes == 500 + 4 * 300 + 13)
        #expect(try store.read { try $0.versions(of: pack) }.map(\.version) == [2, 1])
        #expect(try store.read { try $0.version(1, of: pack) } == one)
    }

    @Test(arguments: StoreFactory.all)
    func aTileOnePacksRefreshChangedIsANewVersionOfEveryPackHoldingIt(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let a = try VersionScript.createPack(store, "a")
        let b = try VersionScript.createPack(store, "b")
        let idle = try VersionScript.createPack(store, "not complete")
        _ = try VersionScript.download(store, a, tiles: 4, now: 100)
        // b and the idle pack link tile 0 (stored by a) and one tile of their own.
        store.submit([ResourceWrite(key: VersionScript.tileKey(0), content: .linkExisting, packID: b),
                      ContractRows.tile(z: 4, x: 0, y: 0, pack: b),
                      ResourceWrite(key: VersionScript.tileKey(0), content: .linkExisting, packID: idle)])
        try store.flush()
        _ = try store.inBatch { try $0.transition(b, .start, now: 101) }
        guard case .applied(let completed) = try store.inBatch({ try $0.transition(b, .finished(failedResources: 0), now: 101) })
        else { Issue.record("b did not complete"); return }
        #expect(completed.createdVersions.map(\.packID) == [b], "b's first version is b's alone")

        let cut = try VersionScript.refresh(store, a, now: 200, writes: [ContractRows.tile(z: 3, x: 0, y: 0, pack: a, size: 123)])
        #expect(cut.map(\.packID) == [a, b], "the idle pack is not complete: its own completion will count the change")
        let ofB = try #require(cut.last)
        #expect(ofB.version == 2 && ofB.changedResources == 1 && ofB.changedBytes == 123 && ofB.resources == 2)
        #expect(try store.read { try $0.pack(idle) }?.version == 0)

        // The idle pack completes later: its first version, everything it holds.
        _ = try store.inBatch { try $0.transition(idle, .start, now: 300) }
        guard case .applied(let idleCompleted) = try store.inBatch({ try $0.transition(idle, .finished(failedResources: 0), now: 300) })
        else { Issue.record("the idle pack did not complete"); return }
        #expect(idleCompleted.createdVersions.map(\.version) == [1])
    }

    @Test(arguments: StoreFactory.all)
    func aVersionedExportIsTheSameFileEveryTime(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let pack = try VersionScript.createPack(store, "same")
        _ = try VersionScript.download(store, pack, tiles: 5, now: 10_000)
        let directory = VersionScript.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let first = try VersionScript.export(store, PackExportRequest(pack: pack, version: 1), to: directory + "/first")
        // Reads touch `accessed`, revalidations move `expires`, `etag`, `modified`: none of it is content.
        _ = try store.read { try $0.resource(VersionScript.tileKey(2), linkedTo: pack) }
        _ = try VersionScript.refresh(store, pack, now: 20_000, writes: [
            ResourceWrite(key: VersionScript.tileKey(0), content: .notModified, cache: HTTPCacheHeaders(expires: 77_777), packID: pack),
            ResourceWrite(key: VersionScript.tileKey(1), content: .unchangedBody, cache: HTTPCacheHeaders(modified: 1, etag: "\"new\""),
                          packID: pack),
        ])
        _ = try store.write { try $0.updatePack(pack, name: "renamed", context: .some([9, 9]), now: 30_000) }
        let again = try VersionScript.export(store, PackExportRequest(pack: pack, version: 1), to: directory + "/again")
        #expect(!first.isEmpty && first == again)
        for format in [PackExportRequest.Format.mbtiles, .pmtiles] {
            let request = PackExportRequest(pack: pack, version: 1, format: format)
            #expect(try VersionScript.export(store, request, to: directory + "/a") == VersionScript.export(store, request, to: directory + "/b"))
        }
    }

    @Test(arguments: StoreFactory.all)
    func versionsThatCannotBeBuiltAreRefusedPrecisely(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let pack = try VersionScript.createPack(store, "refusals")
        let directory = VersionScript.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        func refusal(_ request: PackExportRequest) -> ExportError? {
            do {
                _ = try VersionScript.export(store, request, to: directory + "/x")
                return nil
            } catch {
                return error as? ExportError
            }
        }
        #expect(refusal(PackExportRequest(pack: pack, version: 1)) == .unknownVersion(1, current: 0))
        #expect(refusal(PackExportRequest(pack: 999, version: 1)) == .packNotFound(999))
        _ = try VersionScript.download(store, pack, tiles: 3, now: 10)
        for round in 2...4 {
            _ = try VersionScript.refresh(store, pack, now: Int64(round) * 10,
                                          writes: [ContractRows.tile(z: 3, x: 0, y: 0, pack: pack, size: 100 + round)])
        }
        #expect(try store.read { try $0.versions(of: pack) }.map(\.version) == [4, 3, 2], "three versions are kept")
        #expect(refusal(PackExportRequest(pack: pack, version: 1)) == .versionNotRetained(1, current: 4))
        #expect(refusal(PackExportRequest(pack: pack, version: 3)) == .versionSuperseded(3, current: 4))
        #expect(refusal(PackExportRequest(pack: pack, version: 5)) == .unknownVersion(5, current: 4))
        #expect(refusal(PackExportRequest(pack: pack, version: 4, since: 1)) == .baseNotRetained(1, current: 4))
        #expect(refusal(PackExportRequest(pack: pack, version: 4, since: 4)) == .invalidRequest(
            field: "since", "since must be a version from 1 to 3"))
        #expect(refusal(PackExportRequest(pack: pack, version: 4, format: .pmtiles, since: 2)) == .invalidRequest(
            field: "since", "a delta (since) is a maplibre export"))
        #expect(refusal(PackExportRequest(pack: pack, version: 4, since: 2)) == nil)
        // A refresh under way has changed a row: version 4 is not what the pack holds any more.
        _ = try store.write { try $0.transition(pack, .invalidate, now: 50) }
        _ = try store.inBatch { try $0.transition(pack, .start, now: 50) }
        store.submit([ContractRows.tile(z: 3, x: 1, y: 0, pack: pack, size: 999)])
        try store.flush()
        #expect(refusal(PackExportRequest(pack: pack, version: 4)) == .versionChanging(4))
        #expect(refusal(PackExportRequest(pack: pack, version: nil)) == nil, "what the pack holds now can still be exported")
    }

    @Test(arguments: StoreFactory.all)
    func aDeltaHoldsTheDevicesRegionRowAndOnlyNewerRows(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let pack = try VersionScript.createPack(store, "delta", context: [1, 2, 3])
        _ = try VersionScript.download(store, pack, tiles: 6, now: 1_000)
        _ = try store.write { try $0.updatePack(pack, name: nil, context: .some([7]), now: 1_500) }
        _ = try VersionScript.refresh(store, pack, now: 2_000, writes: [
            ContractRows.tile(z: 3, x: 4, y: 0, pack: pack, size: 64),
            ResourceWrite(key: VersionScript.tileKey(5), content: .noContent, packID: pack),
        ])
        let directory = VersionScript.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/delta.db"
        let summary = try store.read { try $0.export(PackExportRequest(pack: pack, version: 2, since: 1), to: path) }
        #expect(summary.tiles == 2 && summary.resources == 0)
        let rows = try OfflineFileRows(path: path)
        #expect(rows.regions == [[.integer(1), .text(ContractRows.definition), .blob([1, 2, 3])]],
                "the region row as the device holds it: version 1's description, not the patched context")
        #expect(rows.tiles == [
            ["3/4/0", .integer(64), .integer(2_000), .integer(2_000), .null, .null, .integer(0)],
            ["3/5/0", .null, .integer(2_000), .integer(2_000), .null, .null, .integer(0)],
        ])
        #expect(rows.links == 2)
    }
}

extension VersionContractTests {
    /// A device's file merged back into packd brings a tile the pack lacked: its next version.
    /// (A newer copy of a stored tile would not replace these: their upstream sent no
    /// `Last-Modified`, and a missing `modified` is never replaced, as in MapLibre.)
    @Test(arguments: StoreFactory.all)
    func anImportThatChangesACompletePackIsItsNextVersion(_ factory: StoreFactory) throws {
        let store = try ContractHarness(factory)
        defer { store.close() }
        let pack = try VersionScript.createPack(store, "imported into")
        _ = try VersionScript.download(store, pack, tiles: 4, now: 1_000)
        let directory = VersionScript.directory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/upload.db"
        _ = try store.read { try $0.export(PackExportRequest(pack: pack, version: 1), to: path) }
        do {
            let upload = try Database(path: path, mode: .readWrite)
            try upload.execute("""
                INSERT INTO tiles (url_template, pixel_ratio, z, x, y, data, compressed, modified, accessed)
                SELECT url_template, 1, 3, 7, 0, x'0102030405', 0, modified, accessed FROM tiles WHERE x = 2
                """)
            try upload.execute("INSERT INTO region_tiles (region_id, tile_id) VALUES (1, last_insert_rowid())")
        }
        let checked = try store.store.checkUpload(path: path, limits: UploadLimits(), scratchDirectory: directory).get()
        let outcome = try store.write { try $0.importUpload(checked) }
        #expect(outcome.packs == [ImportOutcome.ImportedPack(id: pack, added: false)])
        let two = try #require(outcome.createdVersions.first)
        #expect(outcome.createdVersions.count == 1 && two.packID == pack && two.version == 2)
        #expect(two.changedResources == 1 && two.changedBytes == 5 && two.removedResources == 0)
        #expect(try store.read { try $0.pack(pack) }?.version == 2)
    }
}

/// Both stores, the same rows and times: every export of a version is the same file.
@Suite struct VersionExportAcrossStoresTests {
    @Test func everyStoreWritesAVersionAsTheSameBytes() throws {
        var exports: [[String: [UInt8]]] = []
        for factory in StoreFactory.all {
            let store = try ContractHarness(factory)
            defer { store.close() }
            let pack = try VersionScript.createPack(store, "across", context: Array("{\"name\":\"across\"}".utf8))
            _ = try VersionScript.download(store, pack, tiles: 8, now: 1_000)
            _ = try VersionScript.refresh(store, pack, now: 2_000, writes: [
                ContractRows.tile(z: 3, x: 0, y: 0, pack: pack, size: 700),
                ResourceWrite(key: VersionScript.tileKey(5), content: .noContent, packID: pack),
                ContractRows.resource(VersionScript.styleURL, pack: pack, text: "{\"version\":8,\"layers\":[]}"),
            ])
            let directory = VersionScript.directory()
            defer { try? FileManager.default.removeItem(atPath: directory) }
            var files: [String: [UInt8]] = [:]
            for (name, request) in [("full", PackExportRequest(pack: pack, version: 2)),
                                    ("delta", PackExportRequest(pack: pack, version: 2, since: 1)),
                                    ("mbtiles", PackExportRequest(pack: pack, version: 2, format: .mbtiles)),
                                    ("pmtiles", PackExportRequest(pack: pack, version: 2, format: .pmtiles))] {
                files[name] = try VersionScript.export(store, request, to: directory + "/" + name)
            }
            exports.append(files)
        }
        try #require(exports.count == 2)
        for name in ["full", "delta", "mbtiles", "pmtiles"] {
            let (sqlite, postgres) = (try #require(exports[0][name]), try #require(exports[1][name]))
            #expect(!sqlite.isEmpty && sqlite == postgres, "\(name): \(sqlite.count) bytes from SQLite, \(postgres.count) from PostgreSQL")
        }
        #expect(exports[0]["delta"] != exports[0]["full"])
    }
}

/// The steps the version tests take, each waiting for its commit.
enum VersionScript {
    static let styleURL = "https://example/style.json"
    static let styleKey = ResourceKey.resource(url: styleURL, kind: .style)

    static func tileKey(_ x: Int64) -> ResourceKey { .tile(TileKey(urlTemplate: ContractRows.template, z: 3, x: x, y: 0)) }

    static func createPack(_ store: ContractHarness, _ name: String, context: [UInt8]? = nil) throws -> Int64 {
        try store.write { try $0.createPack(ContractRows.pack(name, context: context), now: 1) }
    }

    /// Starts the queued pack, stores `tiles` tiles (z 3, y 0) and the style, completes it; the
    /// versions the completion cut.
    static func download(_ store: ContractHarness, _ pack: Int64, tiles: Int64, now: Int64) throws -> [PackVersion] {
        _ = try store.inBatch { try $0.transition(pack, .start, now: now) }
        store.submit((0..<tiles).map { ContractRows.tile(z: 3, x: $0, y: 0, pack: pack) } + [ContractRows.resource(styleURL, pack: pack)])
        try store.flush()
        return try complete(store, pack, now: now)
    }

    /// `invalidate`, start, `writes`, complete: the versions the completion cut.
    static func refresh(_ store: ContractHarness, _ pack: Int64, now: Int64, writes: [ResourceWrite]) throws -> [PackVersion] {
        guard case .applied = try store.write({ try $0.transition(pack, .invalidate, now: now) }) else {
            throw ContractHarness.Timeout()
        }
        _ = try store.inBatch { try $0.transition(pack, .start, now: now) }
        store.submit(writes)
        try store.flush()
        return try complete(store, pack, now: now)
    }

    private static func complete(_ store: ContractHarness, _ pack: Int64, now: Int64) throws -> [PackVersion] {
        guard case .applied(let transition) = try store.inBatch({ try $0.transition(pack, .finished(failedResources: 0), now: now) })
        else { throw ContractHarness.Timeout() }
        return transition.createdVersions
    }

    static func directory() -> String {
        let path = NSTemporaryDirectory() + "packd-versions-\(UUID().uuidString)"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }

    /// The bytes of `request`'s export.
    static func export(_ store: ContractHarness, _ request: PackExportRequest, to path: String) throws -> [UInt8] {
        _ = try store.read { try $0.export(request, to: path) }
        return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
    }
}

/// What an exported MapLibre file holds, for comparing: the region rows; each tile as its
/// z/x/y, data length (NULL: no content), modified, accessed, expires, etag, must_revalidate, in
/// key order; the number of tile links.
struct OfflineFileRows {
    var regions: [[DatabaseValue]] = []
    var tiles: [[DatabaseValue]] = []
    var links: Int64 = 0

    init(path: String) throws {
        let database = try Database(path: path, mode: .readOnly)
        try database.makeStatement("SELECT id, definition, description FROM regions ORDER BY id").forEachRow { row in
            regions.append([row.value(at: 0), row.value(at: 1), row.value(at: 2)])
        }
        try database.makeStatement("""
            SELECT z || '/' || x || '/' || y, LENGTH(data), modified, accessed, expires, etag, must_revalidate
            FROM tiles ORDER BY url_template, pixel_ratio, z, x, y
            """).forEachRow { row in tiles.append((0..<7).map { row.value(at: Int32($0)) }) }
        links = try database.scalarInt("SELECT count(*) FROM region_tiles") ?? 0
    }
}
