import PackdTestSupport
import Foundation
import Jobs
import Packs
import Store
import Testing
@testable import API

/// `POST /v1/packs/{id}/invalidate` and `…/check-update` through a real server and database; the
/// probing itself is Jobs' (JobsTests), here replaced by a hook answering what a test needs.
@Suite struct PackMaintenanceRoutesTests {
    func withServer(scheduling: (any PackScheduling)? = nil, _ body: (RoutesFixture) throws -> Void) throws {
        let fixture = try RoutesFixture(scheduling: scheduling)
        defer {
            fixture.stop()
            fixture.removeFiles()
        }
        try body(fixture)
    }

    /// A template pack moved to `state` directly on the writer (as a finished download leaves it).
    func pack(in server: RoutesFixture, state: PackState) throws -> Int {
        let created = try server.send("POST", "/v1/packs", json: #"{"region": \#(RoutesFixture.templateRegion()), "start": false}"#)
        let id = try #require(created.json["id"] as? Int)
        let done = DispatchSemaphore(value: 0)
        server.writer.perform({ try $0.setPackState(Int64(id), state: state, error: nil, now: 1_800_000_000) }) { _ in done.signal() }
        #expect(done.wait(timeout: .now() + 30) == .success)
        return id
    }

    @Test func invalidateQueuesACompletePackWithZeroedCountsAndRefusesAnyOtherState() throws {
        let queued = QueuedLog()
        try withServer(scheduling: queued) { server in

            let inactive = try pack(in: server, state: .inactive)
            let refused = try server.send("POST", "/v1/packs/\(inactive)/invalidate")
            #expect(refused.status == 409)
            #expect(refused.json["type"] as? String == "urn:packd:problem:conflict")
            #expect((refused.json["detail"] as? String)?.contains("inactive") == true)
            #expect(try server.send("POST", "/v1/packs/987654/invalidate").status == 404)

            let complete = try pack(in: server, state: .complete)
            let before = try server.send("GET", "/v1/packs/\(complete)").json
            #expect(before["invalidation"] is NSNull)
            let started = try server.send("POST", "/v1/packs/\(complete)/invalidate")
            #expect(started.status == 202, "\(started.body)")
            #expect(started.header("ETag") != nil)
            #expect(started.json["state"] as? String == "queued")
            let invalidation = try #require(started.json["invalidation"] as? [String: Any])
            #expect(invalidation["unchanged"] as? Int == 0 && invalidation["updated"] as? Int == 0
                    && invalidation["removed"] as? Int == 0)
            #expect(invalidation["started_at"] is String && invalidation["completed_at"] is NSNull)
            #expect(eventually { queued.values == [Int64(complete)] }, "the scheduler is told to pick it up")

            // Queued now: a second invalidate is refused, and the pack is not queued twice.
            #expect(try server.send("POST", "/v1/packs/\(complete)/invalidate").status == 409)
            #expect(queued.values == [Int64(complete)])
            #expect(try server.send("GET", "/v1/packs/\(complete)").json["invalidation"] is [String: Any])
        }
    }

    @Test func checkUpdateStoresTheAnswerDurablyAndReportsUpstreamFailuresAs502() throws {
        try withServer { server in
            let id = try pack(in: server, state: .complete)
            #expect(try server.send("POST", "/v1/packs/\(id)/check-update").status == 503, "no fetcher wired")

            let answers = CheckAnswers()
            nonisolated(unsafe) let api = server.api!
            server.server.onLoop { api.maintenance.updateChecker = answers }
            #expect(try server.send("GET", "/v1/packs/\(id)").json["update_available"] is NSNull)

            answers.queue(.checked(updateAvailable: true))
            let available = try server.send("POST", "/v1/packs/\(id)/check-update")
            #expect(available.status == 200)
            #expect(available.json["update_available"] as? Bool == true)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["update_available"] as? Bool == true)

            answers.queue(.checked(updateAvailable: false))
            #expect(try server.send("POST", "/v1/packs/\(id)/check-update").json["update_available"] as? Bool == false)

            answers.queue(.upstreamFailed(url: "https://tiles.example.org/style.json", status: 503, detail: "HTTP 503"))
            let failed = try server.send("POST", "/v1/packs/\(id)/check-update")
            #expect(failed.status == 502)
            #expect(failed.json["type"] as? String == "urn:packd:problem:upstream-failed")
            #expect(failed.json["upstream_status"] as? Int == 503)
            #expect((failed.json["detail"] as? String)?.contains("https://tiles.example.org/style.json") == true)
            #expect(try server.send("GET", "/v1/packs/\(id)").json["update_available"] as? Bool == false, "unchanged")

            answers.queue(.nothingToCompare)
            #expect(try server.send("POST", "/v1/packs/\(id)/check-update").status == 409)

            #expect(try server.send("POST", "/v1/packs/987654/check-update").status == 404)
            #expect(answers.asked == [Int64(id), Int64(id), Int64(id), Int64(id)], "an unknown pack is not probed")
        }
    }
}

/// Pack ids the routes queued, recorded from the loop thread.
final class QueuedLog: PackScheduling, @unchecked Sendable {
    private let lock = NSLock()
    private var ids: [Int64] = []
    func packQueued(_ id: Int64) { lock.withLock { ids.append(id) } }
    func packSuspended(_ id: Int64) {}
    func packRemoved(_ id: Int64) {}
    var values: [Int64] { lock.withLock { ids } }
}

/// The answers the check-update hook gives, in order, and the packs it was asked about.
final class CheckAnswers: UpdateChecking, @unchecked Sendable {
    private let lock = NSLock()
    private var answers: [PackUpdateChecker.Outcome] = []
    private var packs: [Int64] = []

    func queue(_ answer: PackUpdateChecker.Outcome) { lock.withLock { answers.append(answer) } }
    var asked: [Int64] { lock.withLock { packs } }

    func check(_ packID: Int64, completion: @escaping (PackUpdateChecker.Outcome) -> Void) {
        completion(lock.withLock {
            packs.append(packID)
            return answers.isEmpty ? .storageFailed("no answer queued") : answers.removeFirst()
        })
    }
}
