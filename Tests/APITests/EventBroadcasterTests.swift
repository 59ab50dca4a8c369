import Foundation
import Loop
import Packs
import PackdTestSupport
import Server
import Testing
@testable import API
@testable import Events

/// A clock the test moves by hand, so coalescing is checked without timing.
final class ManualClock: @unchecked Sendable {
    private let lock = NSLock()
    private var milliseconds: UInt64 = 1_000_000

    var now: UInt64 { lock.withLock { milliseconds } }
    func advance(_ delta: UInt64) { lock.withLock { milliseconds += delta } }
}

/// A server with the two events routes wired to one broadcaster.
final class EventsFixture: @unchecked Sendable {
    let fixture: APIFixture
    private(set) var broadcaster: EventBroadcaster!

    init(configuration: EventBroadcaster.Configuration = .init(), clock: ManualClock? = nil, lastEventID: Int64 = 0) throws {
        nonisolated(unsafe) var made: EventBroadcaster?
        fixture = try APIFixture { router, loop in
            let broadcaster = clock.map { clock in
                EventBroadcaster(loop: loop, lastEventID: lastEventID, configuration: configuration, clock: { clock.now })
            } ?? EventBroadcaster(loop: loop, lastEventID: lastEventID, configuration: configuration)
            made = broadcaster
            router.get("/v1/packs/{id}/events") { request, responder in
                let packID = request.parameters["id"].flatMap { Int64($0) } ?? 0
                broadcaster.subscribe(.pack(packID), stream: EventRoutes.open(APIResponder(responder)), lastEventID: request.headers["Last-Event-ID"].flatMap { Int64($0) }) {
                    [(packID, Array(#"{"snapshot":true}"#.utf8))]
                }
            }
            router.get("/v1/events") { request, responder in
                let lastEventID = request.headers["Last-Event-ID"].flatMap { Int64($0) }
                broadcaster.subscribe(.allPacks, stream: EventRoutes.open(APIResponder(responder)), lastEventID: lastEventID) { [] }
            }
            // Streams whose start was read off the loop as of an id (`EventRoutes`).
            router.get("/snapshot-as-of/{id}") { request, responder in
                let asOf = request.parameters["id"].flatMap { Int64($0) } ?? 0
                broadcaster.subscribe(.allPacks, stream: EventRoutes.open(APIResponder(responder)),
                                      start: .snapshot([(packID: Int64(1), payload: Array(#"{"snapshot":true}"#.utf8))], asOf: asOf))
            }
            router.get("/resume-after/{id}") { request, responder in
                let after = request.parameters["id"].flatMap { Int64($0) } ?? 0
                broadcaster.subscribe(.allPacks, stream: EventRoutes.open(APIResponder(responder)), start: .resume(after: after, stored: []))
            }
        }
        broadcaster = made
    }

    var port: Int { fixture.port }

    func publish(_ kind: PackEvent.Kind, pack: Int64, _ json: String) {
        let broadcaster = broadcaster!
        fixture.onLoop { broadcaster.publish(kind, packID: pack, payload: Array(json.utf8)) }
    }

    var subscriberCount: Int {
        let broadcaster = broadcaster!
        return fixture.onLoop { broadcaster.subscriberCount }
    }

    /// Opens a stream and waits until the broadcaster has registered it.
    func subscribe(_ target: String, headers: [String: String] = [:], receiveBuffer: Int32? = nil) throws -> StreamClient {
        let before = subscriberCount
        let client = try StreamClient(port: port, receiveBuffer: receiveBuffer)
        try client.get(target, headers: headers)
        #expect(eventually { self.subscriberCount > before })
        return client
    }

    func stop() {
        let broadcaster = broadcaster!
        fixture.onLoop { broadcaster.close() }
        fixture.stop()
    }
}

@Suite struct ProgressCoalescerTests {
    @Test func holdsAllButTheNewestWithinAnInterval() {
        var coalescer = ProgressCoalescer(interval: 100)
        #expect(coalescer.offer(packID: 1, payload: [1], now: 0) == [1])
        #expect(coalescer.offer(packID: 1, payload: [2], now: 10) == nil)
        #expect(coalescer.offer(packID: 1, payload: [3], now: 20) == nil)
        // Another pack has its own budget.
        #expect(coalescer.offer(packID: 2, payload: [9], now: 20) == [9])
        #expect(coalescer.delayUntilNextDue(now: 20) == 80)
        #expect(coalescer.takeDue(now: 99).isEmpty)
        let due = coalescer.takeDue(now: 100)
        #expect(due.map(\.packID) == [1])
        #expect(due.first?.payload == [3])
        #expect(coalescer.delayUntilNextDue(now: 100) == nil)
        #expect(coalescer.trackedPacks == 2)
        // Pack 2 has been idle for a whole interval and is forgotten; pack 1 emitted at 100.
        #expect(coalescer.takeDue(now: 120).isEmpty)
        #expect(coalescer.trackedPacks == 1)
        #expect(coalescer.offer(packID: 1, payload: [4], now: 150) == nil)
        #expect(coalescer.takePending(packID: 1, now: 160) == [4])
        #expect(coalescer.takePending(packID: 1, now: 160) == nil)
    }
}

@Suite struct LastEventIDTests {
    func parse(_ value: String?) -> Result<Int64?, Problem> {
        let headers = value.map { HTTPHeaders([("Last-Event-ID", $0)]) } ?? HTTPHeaders()
        return Result { () throws(Problem) -> Int64? in try EventRoutes.lastEventID(of: HTTPRequest(method: .get, target: "/v1/events", headers: headers)) }
    }

    @Test func acceptsOnlyDocumentedIds() {
        #expect(parse(nil) == .success(nil))
        #expect(parse("42") == .success(42))
        #expect(parse("9223372036854775807") == .success(Int64.max))
        for bad in ["", "-1", "+1", "1e3", "9223372036854775808", "99999999999999999999", "12 34"] {
            #expect(throws: Problem.self) { try parse(bad).get() }
        }
    }
}

@Suite struct EventReplayRingTests {
    func event(_ id: Int64, pack: Int64 = 1) -> BroadcastEvent {
        BroadcastEvent(id: id, kind: .progress, packID: pack, payload: [])
    }

    @Test func replaysOnlyWhatItStillHolds() {
        var ring = EventReplayRing(capacity: 4, lastID: 10)
        #expect(ring.events(after: 10, matching: .allPacks) == [])
        #expect(ring.events(after: 9, matching: .allPacks) == nil)
        for id in Int64(11)...16 { ring.append(event(id, pack: id % 2)) }
        // Holds 13...16.
        #expect(ring.events(after: 12, matching: .allPacks)?.map(\.id) == [13, 14, 15, 16])
        #expect(ring.events(after: 14, matching: .pack(1))?.map(\.id) == [15])
        #expect(ring.events(after: 11, matching: .allPacks) == nil)
        #expect(ring.events(after: 16, matching: .allPacks) == [])
        #expect(ring.events(after: 17, matching: .allPacks) == nil)
    }

    @Test func frameCannotBeSplitByLineBreaksInThePayload() {
        let frame = BroadcastEvent(id: 7, kind: .state, packID: 1, payload: Array("{\"a\":\n1}\r".utf8)).frame
        #expect(String(decoding: frame, as: UTF8.self) == "id: 7\nevent: state\ndata: {\"a\": 1} \n\n")
    }
}

@Suite(.serialized) struct EventBroadcasterTests {
    @Test func coalescesProgressAndKeepsIdsIncreasing() throws {
        let clock = ManualClock()
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 0), clock: clock, lastEventID: 41)
        defer { events.stop() }
        let pack = try events.subscribe("/v1/packs/1/events")
        let all = try events.subscribe("/v1/events")
        for step in 0..<50 { events.publish(.progress, pack: 1, #"{"done":\#(step)}"#) }
        events.publish(.progress, pack: 2, #"{"done":0}"#)
        clock.advance(100)
        let broadcaster = events.broadcaster!
        events.fixture.onLoop { broadcaster.flushDueProgress() }
        events.publish(.progress, pack: 1, #"{"done":50}"#)
        events.publish(.state, pack: 1, #"{"state":"complete"}"#)

        let seen = try pack.events { $0.type == "state" }
        // The snapshot first, then the first progress, the newest held one, the one released
        // early by the state change, and the state event.
        #expect(seen.map(\.data) == [#"{"snapshot":true}"#, #"{"done":0}"#, #"{"done":49}"#, #"{"done":50}"#, #"{"state":"complete"}"#])
        #expect(seen.first?.id == 41)
        let ids = seen.dropFirst().compactMap(\.id)
        #expect(ids.count == 4 && zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
        #expect(ids.first == 42)

        let everything = try all.events { $0.type == "state" }
        #expect(everything.count == 5)
        let allIDs = everything.compactMap(\.id)
        #expect(zip(allIDs, allIDs.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test func trailingFlushDeliversTheFinalProgressWithoutAnotherEvent() throws {
        let events = try EventsFixture(configuration: .init(progressInterval: 100, heartbeatInterval: 0))
        defer { events.stop() }
        let client = try events.subscribe("/v1/events")
        let started = Date()
        for step in 0..<200 { events.publish(.progress, pack: 3, #"{"done":\#(step)}"#) }
        let seen = try client.events { $0.data == #"{"done":199}"# }
        let elapsed = Date().timeIntervalSince(started)
        // At most one per 100 ms plus the first one.
        #expect(seen.count <= Int(elapsed * 10) + 2)
        #expect(seen.count >= 2)
    }

    @Test func slowSubscriberLosesOnlyItsOwnOldProgress() throws {
        let events = try EventsFixture(configuration: .init(progressInterval: 0, heartbeatInterval: 0, replayCapacity: 16, subscriberQueueLimit: 8))
        defer { events.stop() }
        let slow = try events.subscribe("/v1/packs/5/events", receiveBuffer: 4096)
        let fast = try events.subscribe("/v1/events")
        // The fast client reads as events come; the slow one reads nothing until the end.
        let fastResult = FastReader(fast)
        let filler = String(repeating: "x", count: 32 * 1024)
        let published = 200
        for step in 0..<published {
            events.publish(.progress, pack: 5, #"{"done":\#(step),"pad":"\#(filler)"}"#)
            if step == 100 { events.publish(.resourceError, pack: 5, #"{"url":"u"}"#) }
            // Pace the publisher by the fast reader so only the slow client can fall behind.
            #expect(eventually { fastResult.count > step })
        }
        events.publish(.state, pack: 5, #"{"state":"complete"}"#)

        let fastSeen = fastResult.wait()
        #expect(fastSeen.filter { $0.type == "progress" }.count == published)
        #expect(fastSeen.contains { $0.type == "resource_error" })

        let slowSeen = try slow.events { $0.type == "state" }
        let progress = slowSeen.filter { $0.type == "progress" }
        #expect(progress.count < published)
        #expect(slowSeen.contains { $0.type == "resource_error" })
        let ids = slowSeen.compactMap(\.id)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
        // What it lost is the oldest: the newest progress event is there.
        #expect(progress.last?.data.hasPrefix(#"{"done":199,"#) == true)
    }

    @Test func fiveHundredSubscribersAllReceiveTheFinalState() throws {
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 0))
        defer { events.stop() }
        var clients: [StreamClient] = []
        for _ in 0..<500 {
            let client = try StreamClient(port: events.port)
            try client.get("/v1/packs/9/events")
            clients.append(client)
        }
        #expect(eventually { events.subscriberCount == 500 })
        for step in 0..<20 { events.publish(.progress, pack: 9, #"{"done":\#(step)}"#) }
        events.publish(.state, pack: 9, #"{"state":"complete"}"#)
        var complete = 0
        for client in clients {
            let seen = try client.events { $0.type == "state" }
            if seen.last?.data == #"{"state":"complete"}"# { complete += 1 }
        }
        #expect(complete == 500)
        clients.removeAll()
        #expect(eventually { events.subscriberCount == 0 })
    }

    @Test func thousandSubscribersStayWellUnderFiftyMebibytes() throws {
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 0))
        defer { events.stop() }
        let before = residentBytes()
        var clients: [StreamClient] = []
        for index in 0..<1000 {
            let client = try StreamClient(port: events.port)
            try client.get(index % 2 == 0 ? "/v1/packs/4/events" : "/v1/events")
            clients.append(client)
        }
        #expect(eventually { events.subscriberCount == 1000 })
        events.publish(.state, pack: 4, #"{"state":"active"}"#)
        for client in clients { _ = try client.events { $0.type == "state" } }
        // Both ends live in this process, so this bounds the server side from above.
        let grown = residentBytes() - before
        print("1000 SSE subscribers (server and clients): RSS grew \(grown / 1024) KiB")
        // AddressSanitizer's redzones and quarantine roughly triple the heap (`make sanitize`).
        let underAddressSanitizer = ProcessInfo.processInfo.environment["PACKD_SANITIZER"] == "address"
        #expect(grown < (underAddressSanitizer ? 150 << 20 : 50 << 20))
    }

    @Test func subscriberTooFarBehindOnUndroppableEventsIsDisconnected() throws {
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 0, subscriberQueueLimit: 4))
        defer { events.stop() }
        let stalled = try events.subscribe("/v1/packs/6/events", receiveBuffer: 4096)
        let filler = String(repeating: "y", count: 64 * 1024)
        var published = 0
        while events.subscriberCount > 0 && published < 1000 {
            events.publish(.state, pack: 6, #"{"pad":"\#(filler)"}"#)
            published += 1
        }
        #expect(events.subscriberCount == 0)
        // The stream ends cleanly, so the client reconnects with Last-Event-ID.
        var received = 0
        while let event = try stalled.nextEvent() { received += event.type == "state" ? 1 : 0 }
        #expect(received < published)
    }

    @Test func lastEventIDReplaysWhatTheRingHoldsElseSnapshot() throws {
        let events = try EventsFixture(configuration: .init(progressInterval: 0, heartbeatInterval: 0, replayCapacity: 4))
        defer { events.stop() }
        for step in 1...3 { events.publish(.state, pack: 1, #"{"n":\#(step)}"#) }
        events.publish(.state, pack: 2, #"{"n":4}"#)
        // Ids 1...4 are held; a client that saw 1 missed 2 and 3 of pack 1.
        let replayed = try events.subscribe("/v1/packs/1/events", headers: ["Last-Event-ID": "1"])
        events.publish(.state, pack: 1, #"{"n":5}"#)
        #expect(try replayed.events { $0.id == 5 }.compactMap(\.id) == [2, 3, 5])

        for step in 6...9 { events.publish(.state, pack: 1, #"{"n":\#(step)}"#) }
        let tooOld = try events.subscribe("/v1/packs/1/events", headers: ["Last-Event-ID": "2"])
        let first = try tooOld.nextEvent()
        #expect(first?.data == #"{"snapshot":true}"#)
        #expect(first?.id == 9)
    }

    /// A snapshot read while newer events went out describes the state as of the id taken
    /// before the read: it goes out under that id, and the newer events follow it.
    @Test func aSnapshotIsFollowedByWhatCameAfterTheIdItWasReadAs() throws {
        let events = try EventsFixture(configuration: .init(progressInterval: 0, heartbeatInterval: 0))
        defer { events.stop() }
        for step in 1...3 { events.publish(.state, pack: 1, #"{"n":\#(step)}"#) }
        let stream = try events.subscribe("/snapshot-as-of/1")
        events.publish(.state, pack: 1, #"{"n":4}"#)
        let received = try stream.events { $0.id == 4 }
        #expect(received.map(\.id) == [1, 2, 3, 4])
        #expect(received.first?.data == #"{"snapshot":true}"#)
    }

    /// A stream started at an id this node has not delivered yet (cluster mode: the store's log
    /// is ahead of the node's notifications) gets nothing up to that id again, then the rest.
    @Test func aStartAheadOfTheRingSkipsWhatItAlreadyHas() throws {
        let events = try EventsFixture(configuration: .init(progressInterval: 0, heartbeatInterval: 0))
        defer { events.stop() }
        let broadcaster = events.broadcaster!
        events.fixture.onLoop {
            broadcaster.deliverStored([BroadcastEvent(id: 1, kind: .state, packID: 1, payload: Array(#"{"n":1}"#.utf8))])
        }
        #expect(events.fixture.onLoop { broadcaster.canContinue(after: 5) && !broadcaster.canReplay(after: 5) })
        let stream = try events.subscribe("/resume-after/5")
        events.fixture.onLoop {
            broadcaster.deliverStored((2...6).map { BroadcastEvent(id: $0, kind: .state, packID: 1, payload: Array(#"{"n":\#($0)}"#.utf8)) })
        }
        #expect(try stream.nextEvent()?.id == 6)
    }

    @Test func headGetsTheHeadAndNoSubscription() throws {
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 0))
        defer { events.stop() }
        let client = try StreamClient(port: events.port)
        try client.send("HEAD /v1/events HTTP/1.1\r\nHost: x\r\n\r\nGET /v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
        try client.readHead()
        #expect(client.status == 200)
        #expect(client.header("Content-Type") == "text/event-stream")
        // The pipelined GET is answered after it: the HEAD response ended.
        try client.readHead()
        #expect(client.status == 200)
        #expect(eventually { events.subscriberCount == 1 })
    }

    @Test func heartbeatsAndDisconnectFreesTheSubscriber() throws {
        let events = try EventsFixture(configuration: .init(heartbeatInterval: 20))
        defer { events.stop() }
        var client: StreamClient? = try events.subscribe("/v1/events")
        #expect(events.subscriberCount == 1)
        // The opening comment, then heartbeats (as openapi.yaml words them) with nothing published.
        var comments: [String] = []
        for _ in 0..<4 {
            let comment = try client?.nextEvent(returningComments: true)
            #expect(comment?.type == ":")
            comments.append(comment?.data ?? "")
        }
        #expect(comments == [":ok", ": heartbeat", ": heartbeat", ": heartbeat"])
        #expect(client?.comments == 4)
        client = nil
        #expect(eventually { events.subscriberCount == 0 })
    }
}

/// Reads a stream on its own thread until the `state` event, counting progress as it goes.
final class FastReader: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [StreamClient.Event] = []
    private let done = DispatchSemaphore(value: 0)

    init(_ client: StreamClient) {
        nonisolated(unsafe) let client = client
        Thread { [self] in
            while let event = try? client.nextEvent() {
                lock.withLock { seen.append(event) }
                if event.type == "state" { break }
            }
            done.signal()
        }.start()
    }

    var count: Int { lock.withLock { seen.filter { $0.type == "progress" }.count } }

    func wait() -> [StreamClient.Event] {
        _ = done.wait(timeout: .now() + 60)
        return lock.withLock { seen }
    }
}

/// The resident set size of this process, from /proc/self/statm.
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}
