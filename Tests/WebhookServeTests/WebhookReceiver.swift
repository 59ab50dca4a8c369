import Foundation
import PackdTestSupport

/// A webhook receiver on 127.0.0.1 that answers `status` after `delay`, and keeps what each
/// delivery was: its `webhook-id`, type, pack, and how many attempts of the same `webhook-id`
/// were being answered at once (never more than one, if no attempt happens on two nodes at once).
final class WebhookReceiver: @unchecked Sendable {
    struct Delivery {
        var webhookID: String
        var type: String
        var packID: Int?
        var body: [String: Any]
    }

    private let lock = NSLock()
    private var log: [Delivery] = []
    private var open: [String: Int] = [:]
    private(set) var mostAtOnceForOneID = 0
    private var upstream: TestUpstream!

    init(status: Int = 204, delay: Duration? = nil) throws {
        upstream = try TestUpstream { [unowned self] request in
            let id = request.headers["webhook-id"] ?? ""
            lock.withLock {
                open[id, default: 0] += 1
                mostAtOnceForOneID = max(mostAtOnceForOneID, open[id] ?? 0)
            }
            if let delay { Thread.sleep(forTimeInterval: delay.seconds) }
            let body = (try? JSONSerialization.jsonObject(with: Data(request.body))) as? [String: Any] ?? [:]
            lock.withLock {
                open[id, default: 1] -= 1
                log.append(Delivery(webhookID: id, type: body["type"] as? String ?? "",
                                    packID: (body["data"] as? [String: Any])?["id"] as? Int, body: body))
            }
            return .respond(status: status)
        }
    }

    var url: String { upstream.url("/hooks/packd") }
    var deliveries: [Delivery] { lock.withLock { log } }
    var atOnce: Int { lock.withLock { mostAtOnceForOneID } }

    /// Deliveries per `webhook-id`.
    var countsByID: [String: Int] {
        deliveries.reduce(into: [:]) { $0[$1.webhookID, default: 0] += 1 }
    }

    func stop() { upstream.stop() }
}

extension PackdServer {
    /// Every delivery row of endpoint `id`, through the API's pages.
    func webhookDeliveries(_ id: Int) throws -> [[String: Any]] {
        var result: [[String: Any]] = []
        var next: String? = "/v1/webhooks/\(id)/deliveries?limit=500"
        while let path = next {
            let page = try send("GET", path)
            guard page.status == 200 else { throw ClientFailure(description: "deliveries answered \(page.status): \(page.body)") }
            result += page.json["deliveries"] as? [[String: Any]] ?? []
            next = page.json["next"] as? String
        }
        return result
    }

    /// Every pack, through the API's pages.
    func allPacks() throws -> [[String: Any]] {
        var result: [[String: Any]] = []
        var next: String? = "/v1/packs?limit=500"
        while let path = next {
            let page = try send("GET", path)
            result += page.json["packs"] as? [[String: Any]] ?? []
            next = page.json["next"] as? String
        }
        return result
    }
}
