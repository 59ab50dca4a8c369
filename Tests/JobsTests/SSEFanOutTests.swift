import Foundation
import Glibc
import PackdTestSupport
import Testing

/// Server-sent events under load on a real `packd serve`: hundreds of subscribers on one pack,
/// and a subscriber that never reads, which must cost the download nothing.
@Suite(.serialized) struct SSEFanOutTests {
    /// Each subscriber is a socket here and one in packd (which inherits the limit).
    static func raiseOpenFileLimit(to wanted: rlim_t) {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        guard limit.rlim_cur < wanted else { return }
        limit.rlim_cur = min(wanted, limit.rlim_max)
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }

    @Test func fiveHundredSubscribersAllReceiveComplete() throws {
        Self.raiseOpenFileLimit(to: 4096)
        let (upstream, server) = try APIProof.start(holdingTilesAfter: 0)
        defer { APIProof.end(upstream, server) }
        let packID = try APIProof.createPack(server, upstream, maxZoom: 6)
        let target = "/v1/packs/\(packID)/events"

        var subscribers: [StreamClient] = []
        for _ in 0..<500 { subscribers.append(try server.events(target)) }
        #expect(subscribers.allSatisfy { $0.status == 200 })
        #expect(eventually(within: 60) { (try? server.metric("packd_sse_subscribers")) == 500 })
        upstream.releaseTiles()

        // Read after the fact: every stream holds the whole story, in order, ending in `complete`.
        var reference: [Int64]?
        for subscriber in subscribers {
            let events = try APIProof.readUntilState(subscriber, "complete", packID: packID)
            let ids = events.compactMap(\.id)
            #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
            // Each started with a snapshot (its id is the newest event then); after it, all saw
            // the same state events: none was lost to the crowd.
            let states = events.dropFirst().filter { $0.type == "state" }.compactMap(\.id)
            if let reference {
                #expect(states == reference.filter { $0 > ids[0] })
            } else {
                reference = states
            }
        }
        subscribers[0].recordStream(target: target)
        subscribers = []
        #expect(eventually(within: 60) { (try? server.metric("packd_sse_subscribers")) == 0 })
    }

    @Test func aSubscriberThatNeverReadsDoesNotSlowTheDownload() throws {
        let server = try PackdServer()
        defer { server.remove() }

        // Identical downloads (separate upstreams, so nothing is already stored): alone, with a
        // stalled subscriber on every event since the first, and alone again.
        let first = try MapUpstream()
        defer { first.stop() }
        let alone = try timeDownload(server, first)

        let second = try MapUpstream()
        defer { second.stop() }
        let stalled = try server.events("/v1/events", headers: ["Last-Event-ID": "0"], receiveBuffer: 2048)
        nonisolated(unsafe) let watcher = try server.events("/v1/events")
        let watched = Watched()
        let reader = Thread {
            while let event = try? watcher.nextEvent() {
                if event.type == "state", APIProof.data(event)["state"] as? String == "complete" { watched.sawComplete() }
            }
        }
        reader.start()
        let withStalled = try timeDownload(server, second)
        // The other subscriber kept up: it saw the completion promptly.
        #expect(eventually(within: 10) { watched.completions >= 1 })

        // The stalled stream was backed up: once `complete` has gone out (the watcher saw it),
        // its socket still holds only part of what was sent to it, the rest waits in packd.
        let unread = Self.bytesWaiting(stalled.fd)
        let events = try APIProof.readUntilState(stalled, "complete", packID: withStalled.packID)
        #expect(stalled.bytesReceived > 2 * unread, "\(stalled.bytesReceived) read, \(unread) were in the socket")
        #expect(events.contains { $0.type == "state" && APIProof.data($0)["pack_id"] as? Int == alone.packID })
        let ids = events.compactMap(\.id)
        #expect(zip(ids, ids.dropFirst()).allSatisfy { $0 < $1 })
        shutdown(watcher.fd, Int32(SHUT_RDWR))
        reader.cancel()
        shutdown(stalled.fd, Int32(SHUT_RDWR))

        // A third download alone, after the stalled run: on a loaded machine the pace drifts,
        // and the slower of the two runs around it is what the stalled run is held to.
        let third = try MapUpstream()
        defer { third.stop() }
        let aloneAfter = try timeDownload(server, third)
        let baseline = max(alone.seconds, aloneAfter.seconds)
        #expect(withStalled.seconds < 2 * baseline,
                "alone \(alone.seconds) s and \(aloneAfter.seconds) s, with a stalled subscriber \(withStalled.seconds) s")
    }

    /// Creates a pack of `upstream` and polls until it is complete; the wall time between.
    private func timeDownload(_ server: PackdServer, _ upstream: MapUpstream) throws -> (packID: Int, seconds: Double) {
        let started = Date()
        let packID = try APIProof.createPack(server, upstream, maxZoom: 9)
        let pack = try APIProof.waitForPack(server, packID) { ["complete", "failed"].contains(APIProof.state($0)) }
        #expect(APIProof.state(pack) == "complete")
        return (packID, Date().timeIntervalSince(started))
    }

    /// Bytes in the socket's receive queue.
    private static func bytesWaiting(_ fd: Int32) -> Int {
        var count: Int32 = 0
        _ = ioctl(fd, UInt(FIONREAD), &count)
        return Int(count)
    }
}

/// What the reading subscriber saw, shared with its thread.
private final class Watched: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func sawComplete() { lock.withLock { count += 1 } }
    var completions: Int { lock.withLock { count } }
}
