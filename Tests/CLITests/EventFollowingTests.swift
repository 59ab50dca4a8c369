import Foundation
import PackdTestSupport
import Packs
import Testing

/// `packd wait` against a scripted server standing in for packd, for what a real one does only
/// under failure: a stream that ends and is resumed with `Last-Event-ID`, and a stream that
/// cannot be opened at all (a proxy), where the pack is polled with `If-None-Match`.
@Suite struct EventFollowingTests {
    static func pack(_ state: PackState, completed: Int64, error: PackError? = nil) -> Pack {
        Pack(id: 7, name: "scripted", region: Region(tiles: ["https://t.example/{z}/{x}/{y}.png"], bounds: [0, 0, 1, 1], minZoom: 0, maxZoom: 1),
             context: nil, state: state, createdAt: Timestamp(1_800_000_000), updatedAt: Timestamp(1_800_000_000), completedAt: nil,
             progress: PackProgress(completedResources: completed, expectedResources: 4, expectedIsPrecise: true), limits: PackLimits(),
             error: error, updateAvailable: nil, invalidation: nil)
    }

    /// `id`, `event` and `data` lines of one event.
    static func event(_ id: Int, _ event: PackEvent) throws -> String {
        "id: \(id)\nevent: \(event.kind.rawValue)\ndata: " + String(decoding: try SortedJSONEncoder.encode(event.payload), as: UTF8.self) + "\n\n"
    }

    static func progress(_ state: PackState, _ completed: Int64) -> PackEvent {
        .progress(ProgressEvent(packID: 7, state: state, progress: pack(state, completed: completed).progress))
    }

    @Test func aStreamThatEndsIsResumedWithLastEventID() throws {
        let first = try Self.event(41, Self.progress(.active, 1)) + ": heartbeat\n\n"
            + "id: 42\nevent: future_kind\ndata: {\"anything\": true}\n\n"
        let second = try Self.event(43, Self.progress(.active, 3))
            + Self.event(44, .state(StateEvent(packID: 7, state: .complete, previousState: .active, error: nil)))
        let upstream = try TestUpstream { request in
            guard request.target == "/v1/packs/7/events" else { return .respond(status: 404) }
            // The first stream ends after two events (a restart); the second resumes after them.
            let body = request.headers["last-event-id"] == nil ? first : second
            return .respond(status: 200, headers: [("Content-Type", "text/event-stream")], body: Array(body.utf8))
        }
        defer { upstream.stop() }
        let run = try PackdCommand.run(["wait", "7", "--server", upstream.url("")])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = try CommandLineTests.events(run.stdout)
        // The unknown kind is skipped; its id still counts for the resumption.
        #expect(lines.map(\.id) == [41, 43, 44])
        #expect(upstream.requests.map { $0.headers["last-event-id"] } == [nil, "42"])
        #expect(upstream.requests.allSatisfy { $0.headers["accept"] == "text/event-stream" })
    }

    @Test func withoutAStreamThePackIsPolledWithIfNoneMatch() throws {
        let failure = PackError(.upstreamUnauthorized, "the upstream refused the request", url: "https://t.example/0/0/0.png", status: 403)
        let polls = Counter()
        let upstream = try TestUpstream { request in
            switch request.target {
            case "/v1/packs/7/events":
                // A proxy that does not pass event streams.
                return .respond(status: 502, headers: [("Content-Type", "text/html")], body: Array("<h1>Bad Gateway</h1>".utf8))
            case "/v1/packs/7":
                let poll = polls.next()
                if poll == 0 { return Self.answer(Self.pack(.active, completed: 1), etag: "\"v1\"") }
                if poll < 3 && request.headers["if-none-match"] == "\"v1\"" { return .respond(status: 304, headers: [("ETag", "\"v1\"")]) }
                return Self.answer(Self.pack(.failed, completed: 2, error: failure), etag: "\"v2\"")
            case "/v1/packs/7/errors?limit=5":
                let list = #"{"errors": [{"url": "https://t.example/1/0/0.png", "status": 403, "error": null, "attempts": 1, "last_attempt_at": "2027-01-15T08:00:00Z"}, {"url": "https://t.example/1/1/0.png", "status": null, "error": "connection reset", "attempts": 5, "last_attempt_at": "2027-01-15T08:00:01Z"}], "total": 7}"#
                return .respond(status: 200, headers: [("Content-Type", "application/json")], body: Array(list.utf8))
            default:
                return .respond(status: 404)
            }
        }
        defer { upstream.stop() }
        let run = try PackdCommand.run(["wait", "7", "--server", upstream.url("")])
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.contains("pack 7 failed: upstream_unauthorized: the upstream refused the request (403 for https://t.example/0/0/0.png)"),
                "\(run.stderr)")
        // Then the first failed resources, and how many more there are.
        #expect(run.stderr.hasSuffix(")\n  status 403 after 1 attempt: https://t.example/1/0/0.png\n  connection reset after 5 attempts: https://t.example/1/1/0.png\n  … 5 more (packd show 7)\n"),
                "\(run.stderr)")
        let lines = try CommandLineTests.events(run.stdout)
        #expect(lines.allSatisfy { $0.id == nil }, "made-up events have no stream id")
        #expect(lines.map(\.event.kind) == [.progress, .state, .progress])
        if case .state(let change) = lines[1].event {
            #expect(change.previousState == .active && change.state == .failed && change.error == failure)
        }
        let conditional = upstream.requests.filter { $0.target == "/v1/packs/7" }.map { $0.headers["if-none-match"] }
        #expect(conditional.first == .some(nil) && conditional.dropFirst().allSatisfy { $0 == "\"v1\"" } && conditional.count == 4)
        #expect(upstream.requests.filter { $0.target == "/v1/packs/7/events" }.count == 1, "the stream is tried once")
    }

    static func answer(_ pack: Pack, etag: String) -> TestUpstream.Reply {
        .respond(status: 200, headers: [("Content-Type", "application/json"), ("ETag", etag)], body: (try? SortedJSONEncoder.encode(pack)) ?? [])
    }

    /// Requests counted across the upstream's threads.
    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var value = 0

        func next() -> Int {
            lock.withLock {
                defer { value += 1 }
                return value
            }
        }
    }
}
