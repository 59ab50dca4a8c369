import Foundation
import PackdTestSupport
import Store
import Testing

/// The database's file system fills up in the middle of a download (a real ENOSPC from a small
/// tmpfs, SQLITE_FULL to packd): the pack stops `failed` with `storage_full` and says so, what was
/// committed before stays, the API keeps answering, and once space is freed `resume` completes
/// the pack with every body stored exactly.
@Suite struct DiskFullTests {
    @Test(.enabled(if: SmallFileSystem.available, "mounting a tmpfs needs root (CI and the dev machines run as root)"))
    func aFullDiskFailsThePackWithStorageFullAndResumeCompletesIt() throws {
        let disk = try SmallFileSystem(bytes: 64 << 20)
        defer { disk.unmount() }
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let server = try PackdServer(logLevel: "info", capturesOutput: true, directory: disk.directory)
        defer { server.remove() }
        // The reserve file is counted in the storage figures while it holds its room.
        let reserve = Int64(16 << 20)
        #expect(Self.reserveBytes(server) == reserve)
        // Room for the database as it is now and 1 MiB more: a part of the pack, not all of it
        // (a commit logs whole 16 KiB pages: 256 KiB did not hold the first batch).
        try disk.resize(to: disk.usedBytes + (1 << 20))

        let maxZoom = 10
        let planned = try PackDownloadTests.planned(upstream, maxZoom: maxZoom)
        let plannedBytes = planned.reduce(0) { $0 + (upstream.body(for: PackDownloadTests.path($1.url, upstream))?.count ?? 0) }
        #expect(plannedBytes > 2 * (1 << 20), "the pack must not fit")
        let packID = try APIProof.createPack(server, upstream, maxZoom: maxZoom, name: "disk full")
        // The `failed` state is itself a write the full disk could refuse (it did in ~1 of 6
        // runs): it lands in the room the writer's `StorageReserve` held, without freeing space.
        let failed: [String: Any]
        do {
            failed = try APIProof.waitForPack(server, packID, within: 60) { ["failed", "complete"].contains(APIProof.state($0)) }
        } catch {
            Issue.record("--- packd's log:\n\(String(decoding: (server.standardOutput + server.standardError).suffix(3000), as: UTF8.self))")
            throw error
        }
        #expect(APIProof.state(failed) == "failed")
        let error = failed["error"] as? [String: Any] ?? [:]
        #expect(error["code"] as? String == "storage_full", "\(failed)")
        let detail = error["detail"] as? String ?? ""
        #expect(detail.contains("full") && detail.contains("free"), "\(detail)")
        let committed = APIProof.progress(failed, "completed_resources")
        #expect(committed > 0 && committed < planned.count, "\(committed) of \(planned.count)")

        // The API keeps answering: reads as usual, a write with a precise problem while the disk
        // is full.
        #expect(try server.send("GET", "/v1/storage").status == 200)
        // The full disk released the reserve: the figures say so.
        #expect(Self.reserveBytes(server) == 0)
        #expect(try server.send("GET", "/v1/packs").status == 200)
        let rename = try server.send("PATCH", "/v1/packs/\(packID)", json: ["name": "disk full!"])
        if rename.status != 200 {
            // The write met the full disk too: a 503 that says so, not a bare 500.
            #expect(rename.status == 503 && rename.body.contains("disk is full"), "\(rename.status) \(rename.body)")
        }

        // Nothing committed is lost: the rows the progress counts are there, read beside the server.
        let reader = try StoreReader(path: server.databasePath)
        #expect(try reader.progress(Int64(packID))?.completedResources == Int64(committed))

        // Space is freed: resume (no restart) downloads the rest, and the pack ends exactly as planned.
        try disk.resize(to: 256 << 20)
        #expect(try server.send("PATCH", "/v1/packs/\(packID)", json: ["name": "disk full!"]).status == 200)
        let resumed = try server.send("POST", "/v1/packs/\(packID)/resume")
        #expect(resumed.status == 200, "\(resumed.body)")
        let done = try APIProof.waitForPack(server, packID) { ["failed", "complete"].contains(APIProof.state($0)) }
        #expect(APIProof.state(done) == "complete", "\(done)")
        #expect(APIProof.progress(done, "completed_resources") == planned.count)
        #expect(APIProof.progress(done, "expected_resources") == planned.count)
        // With room again, the writer took the reserve back before storing the rest.
        #expect(Self.reserveBytes(server) == reserve)
        #expect(server.stop() == 0)
        let final = try StoreReader(path: server.databasePath)
        for resource in planned {
            let stored = try #require(try final.resource(PackDownloadTests.storedKey(resource)), "\(resource.url) not stored")
            #expect(try stored.body?.decoded() == upstream.body(for: PackDownloadTests.path(resource.url, upstream)), "\(resource.url)")
        }
    }

    /// `reserve_bytes` of `GET /v1/storage`; -1 when the answer has none.
    static func reserveBytes(_ server: PackdServer) -> Int64 {
        guard let answer = try? server.send("GET", "/v1/storage"), answer.status == 200,
              let bytes = answer.json["reserve_bytes"] as? Int else { return -1 }
        return Int64(bytes)
    }
}
