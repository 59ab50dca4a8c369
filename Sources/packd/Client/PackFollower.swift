import Foundation
import Packs

/// Follows one pack until it is complete, fails or is deleted (`packd wait`, `create --wait`):
/// its event stream (`GET /v1/packs/{id}/events`), reconnecting with `Last-Event-ID` when the
/// stream breaks; polling `GET /v1/packs/{id}` with `If-None-Match` only when the stream cannot be
/// opened at all (a proxy that buffers or refuses event streams). Every event goes to the view.
struct PackFollower {
    enum Outcome: Equatable {
        case complete
        /// The pack's error when the event carried it.
        case failed(PackError?)
        case removed
    }

    let client: ServerClient
    let packID: Int64
    let view: any PackEventView
    /// How long reconnecting may fail before the server counts as unreachable.
    var reconnectWindow: Duration = .seconds(30)
    /// Seconds between polls when there is no stream.
    var pollInterval = 1.0
    /// Seconds without a byte (the server's heartbeat is 15 s by default) before a stream counts
    /// as broken.
    var idleTimeout = 60

    private var path: String { "/v1/packs/\(packID)/events" }

    func follow() throws(ClientFailure) -> Outcome {
        var lastEventID: String?
        var everOpened = false
        var brokenSince: ContinuousClock.Instant?
        var backoff = 0.2
        while true {
            var parser = ServerSentEventParser()
            var outcome: Outcome?
            var broken: ClientFailure?
            var received = 0
            // The id may hold only what a header line can (the parser never keeps CR or LF).
            let headers = ["Accept: text/event-stream"] + (lastEventID.map { ["Last-Event-ID: \($0)"] } ?? [])
            let result: (opened: Bool, response: ServerClient.Response)
            do {
                result = try client.stream(path, headers: headers, contentType: "text/event-stream", idleTimeout: idleTimeout) { bytes in
                    do {
                        for event in try parser.feed(bytes) {
                            received += 1
                            if let id = event.id { lastEventID = id }
                            // A kind this client does not know (a newer server) is skipped.
                            guard PackEvent.Kind(rawValue: event.type) != nil else { continue }
                            let decoded = try PackEvent(kind: event.type, data: Data(event.data))
                            view.show(decoded, id: event.id.flatMap { Int64($0) })
                            if let end = Self.outcome(of: decoded) {
                                outcome = end
                                return false
                            }
                        }
                        return true
                    } catch {
                        broken = .unexpected("the event stream of pack \(packID) is not the documented JSON: \(error)")
                        return false
                    }
                }
            } catch {
                // Never connected: the server is not there. Connected before: it may be restarting.
                guard everOpened else { throw error }
                try wait(since: &brokenSince, backoff: &backoff, failure: error)
                continue
            }
            if let broken { throw broken }
            if let outcome { return outcome }
            if result.opened {
                // The server ended the stream (a restart, a proxy's timeout): reconnect at once
                // when it carried events, else after a growing pause (never a busy loop against
                // a server that ends every stream at once).
                everOpened = true
                brokenSince = nil
                if received > 0 {
                    backoff = 0.2
                } else {
                    Thread.sleep(forTimeInterval: backoff)
                    backoff = min(backoff * 2, 5)
                }
                continue
            }
            let response = result.response
            if [401, 403, 404].contains(response.status) {
                throw ClientFailure.refusal(status: response.status, body: response.body)
            }
            guard everOpened else { return try poll() }
            try wait(since: &brokenSince, backoff: &backoff, failure: ClientFailure.refusal(status: response.status, body: response.body))
        }
    }

    /// Sleeps before the next reconnect, or throws `failure` once reconnecting has failed for
    /// longer than `reconnectWindow`.
    private func wait(since brokenSince: inout ContinuousClock.Instant?, backoff: inout Double, failure: ClientFailure) throws(ClientFailure) {
        let now = ContinuousClock.now
        let since = brokenSince ?? now
        brokenSince = since
        guard now - since < reconnectWindow else { throw failure }
        Thread.sleep(forTimeInterval: backoff)
        backoff = min(backoff * 2, 5)
    }

    /// Without a stream: the pack every `pollInterval`, a 304 while nothing changed; the changes
    /// shown as the events the stream would have carried.
    private func poll() throws(ClientFailure) -> Outcome {
        var etag: String?
        var previous: Pack?
        while true {
            let response = try client.send("GET", "/v1/packs/\(packID)", headers: etag.map { ["If-None-Match: \($0)"] } ?? [])
            switch response.status {
            case 304:
                break
            case 200:
                let pack: Pack
                do {
                    pack = try JSONDecoder().decode(Pack.self, from: response.body)
                } catch {
                    throw .unexpected("pack \(packID) is not the documented JSON: \(error)")
                }
                etag = response.headers["etag"]
                if let previous, previous.state != pack.state {
                    view.show(.state(StateEvent(packID: packID, state: pack.state, previousState: previous.state, error: pack.error)), id: nil)
                }
                let progress = PackEvent.progress(ProgressEvent(packID: packID, state: pack.state, progress: pack.progress,
                                                                invalidation: pack.invalidation))
                view.show(progress, id: nil)
                if let outcome = Self.outcome(of: progress) {
                    return outcome == .failed(nil) ? .failed(pack.error) : outcome
                }
                previous = pack
            case 404 where previous != nil:
                view.show(.packRemoved(PackRemovedEvent(packID: packID)), id: nil)
                return .removed
            default:
                throw ClientFailure.refusal(status: response.status, body: response.body)
            }
            Thread.sleep(forTimeInterval: pollInterval)
        }
    }

    /// Whether `event` ends the wait.
    static func outcome(of event: PackEvent) -> Outcome? {
        switch event {
        case .state(let change) where change.state == .complete: .complete
        case .state(let change) where change.state == .failed: .failed(change.error)
        case .progress(let progress) where progress.state == .complete: .complete
        case .progress(let progress) where progress.state == .failed: .failed(nil)
        case .packRemoved: .removed
        default: nil
        }
    }
}
