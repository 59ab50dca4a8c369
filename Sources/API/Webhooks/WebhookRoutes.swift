import Foundation
import Logging
import Packs
import Server
import Webhooks

/// `/v1/webhooks…` (admin role): endpoints (their secret shown once, at creation and rotation),
/// pings, the deliveries of each and their retry. Sending is the dispatcher's (`Webhooks`); these
/// routes only write the store and wake it. Loop thread only.
public final class WebhookRoutes {
    /// Endpoints one server keeps: each is matched against every pack change.
    public static let maximumEndpoints = 100
    /// How long a rotated secret keeps signing beside the new one.
    public static let rotationOverlap: Int64 = 86_400_000
    static let pageLimit = 500
    static let defaultPageSize = 50

    let store: any PackStore
    let logger: Logger
    /// Checks a URL when an endpoint is created or changed (`packd` sets the upstream policy's).
    public var urlPolicy: WebhookURLPolicy
    /// Tells the dispatcher that a delivery is due now (a ping, a retry); nil: none runs.
    public var wake: (() -> Void)?
    /// Unix milliseconds; tests inject their own.
    var clock: @Sendable () -> Int64 = WebhookStoreRules.nowMilliseconds
    /// How long a manually retried delivery has to succeed, in ms (`packd` sets
    /// `--webhook-max-age`): its deadline moves to at least now plus this.
    public var retryWindow: Int64 = 60_000

    public init(store: any PackStore, urlPolicy: WebhookURLPolicy, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.urlPolicy = urlPolicy
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.post, "/v1/webhooks", role: .admin, to: &router) { [unowned self] in create($0, $1) }
        routes.add(.get, "/v1/webhooks", role: .admin, to: &router) { [unowned self] in list($1) }
        routes.add(.get, "/v1/webhooks/{id}", role: .admin, to: &router) { [unowned self] in show($0, $1) }
        routes.add(.patch, "/v1/webhooks/{id}", role: .admin, to: &router) { [unowned self] in update($0, $1) }
        routes.add(.delete, "/v1/webhooks/{id}", role: .admin, to: &router) { [unowned self] in remove($0, $1) }
        routes.add(.post, "/v1/webhooks/{id}/secret", role: .admin, to: &router) { [unowned self] in rotate($0, $1) }
        routes.add(.post, "/v1/webhooks/{id}/ping", role: .admin, to: &router) { [unowned self] in ping($0, $1) }
        routes.add(.get, "/v1/webhooks/{id}/deliveries", role: .admin, to: &router) { [unowned self] in deliveries($0, $1) }
        routes.add(.get, "/v1/webhooks/{id}/deliveries/{delivery_id}", role: .admin, to: &router) { [unowned self] in
            delivery($0, $1)
        }
        routes.add(.post, "/v1/webhooks/{id}/deliveries/{delivery_id}/retry", role: .admin, to: &router) { [unowned self] in
            retry($0, $1)
        }
    }

    // MARK: Endpoints

    private struct TooManyEndpoints: Error {}

    private func create(_ request: HTTPRequest, _ responder: APIResponder) {
        let body: WebhookRequestBody
        do throws(Problem) {
            body = try WebhookRequestBody(request, creating: true, urlPolicy: urlPolicy)
        } catch {
            return responder.respond(error)
        }
        let secret = WebhookSecret.generate().text
        let now = clock()
        let record = WebhookEndpointRecord(
            url: body.url ?? "", description: body.description ?? "",
            subscription: WebhookSubscription(events: body.events ?? [], packIDs: body.packIDs ?? nil), secret: secret,
            createdAt: now, updatedAt: now)
        store.write({ database -> WebhookEndpointRecord? in
            guard try database.webhookEndpoints().count < Self.maximumEndpoints else { throw TooManyEndpoints() }
            return try database.webhookEndpoint(try database.createWebhookEndpoint(record))
        }) { [self] result in
            switch result {
            case .failure(is TooManyEndpoints):
                responder.respond(Problem(.conflict, detail: "a server keeps at most \(Self.maximumEndpoints) webhooks; remove one first"))
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "creating the webhook")
            case .success(nil):
                responder.respondInternalError(StoreError(.other, "the created webhook is missing"), logger: logger, "creating the webhook")
            case .success(let created?):
                logger.info("webhook created", metadata: ["webhook_id": "\(created.id)", "events": "\(created.subscription.events)"])
                respond(WebhookEndpoint(created, now: now, secret: secret), status: .created,
                        headers: ["Location": "/v1/webhooks/\(created.id)"], responder)
            }
        }
    }

    private func list(_ responder: APIResponder) {
        let now = clock()
        store.read({ reader in try reader.webhookEndpoints() }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "listing the webhooks")
            case .success(let records):
                respond(WebhookEndpointList(webhooks: records.map { WebhookEndpoint($0, now: now) }), responder)
            }
        }
    }

    private func show(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        let now = clock()
        store.read({ reader in try reader.webhookEndpoint(id) }) { [self] result in
            answer(result, id: id, "reading the webhook", responder) { WebhookEndpoint($0, now: now) }
        }
    }

    private func update(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        let body: WebhookRequestBody
        do throws(Problem) {
            body = try WebhookRequestBody(request, creating: false, urlPolicy: urlPolicy)
        } catch {
            return responder.respond(error)
        }
        let change = WebhookEndpointChange(url: body.url, description: body.description, events: body.events, packIDs: body.packIDs,
                                           enabled: body.enabled)
        let now = clock()
        store.write({ database in try database.updateWebhookEndpoint(id, change, now: now) }) { [self] result in
            answer(result, id: id, "changing the webhook", responder) { WebhookEndpoint($0, now: now) }
            // Enabled again: what waited for it is due.
            if body.enabled == true { wake?() }
        }
    }

    private func remove(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        store.write({ database in try database.deleteWebhookEndpoint(id) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "removing the webhook")
            case .success(false): responder.respond(Self.notFound(id))
            case .success(true):
                logger.info("webhook removed", metadata: ["webhook_id": "\(id)"])
                responder.respond(HTTPResponse(status: .noContent))
            }
        }
    }

    /// A new secret, shown in this answer only; the old one signs beside it for 24 h.
    private func rotate(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        let secret = WebhookSecret.generate().text
        let now = clock()
        store.write({ database in
            try database.rotateWebhookSecret(id, secret: secret, previousUntil: now + Self.rotationOverlap, now: now)
        }) { [self] result in
            answer(result, id: id, "rotating the webhook's secret", responder) { WebhookEndpoint($0, now: now, secret: secret) }
        }
    }

    // MARK: Deliveries

    private func ping(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        let now = clock()
        let data = #"{"webhook_id":\#(id)}"#
        store.write({ database -> WebhookDeliveryRecord?? in
            guard let endpoint = try database.webhookEndpoint(id) else { return nil }
            guard endpoint.enabled else { return .some(nil) }
            return .some(try database.enqueueWebhookPing(endpointID: id, data: data, now: now))
        }) { [self] result in
            switch result {
            case .success(.some(nil)):
                responder.respond(Problem(.conflict, detail: "webhook \(id) is disabled; enable it (PATCH enabled: true) to ping it"))
            case .success(.some(let delivery?)):
                wake?()
                respond(WebhookDelivery(delivery), status: .accepted, responder)
            case .success(nil):
                responder.respond(Self.notFound(id))
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "queueing the ping")
            }
        }
    }

    private func deliveries(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder) else { return }
        let limit: Int
        let before: Int64?
        do throws(Problem) {
            limit = try Self.integerQuery(request, "limit", in: 1...Int64(Self.pageLimit)).map(Int.init) ?? Self.defaultPageSize
            before = try Self.integerQuery(request, "before", in: 1...Int64.max)
        } catch {
            return responder.respond(error)
        }
        store.read({ reader -> [WebhookDeliveryRecord]? in
            guard try reader.webhookEndpoint(id) != nil else { return nil }
            return try reader.webhookDeliveries(endpointID: id, before: before, limit: limit)
        }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "listing the deliveries")
            case .success(nil): responder.respond(Self.notFound(id))
            case .success(let page?):
                let next = page.count == limit ? page.last.map { "/v1/webhooks/\(id)/deliveries?before=\($0.id)&limit=\(limit)" } : nil
                respond(WebhookDeliveryList(deliveries: page.map { WebhookDelivery($0) }, next: next), responder)
            }
        }
    }

    private func delivery(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder), let deliveryID = Self.id(request, "delivery_id", responder) else { return }
        store.read({ reader -> WebhookDelivery? in
            guard let record = try reader.webhookDelivery(deliveryID, endpointID: id) else { return nil }
            return WebhookDelivery(record, attempts: try reader.webhookAttempts(deliveryID: deliveryID))
        }) { [self] result in
            answer(result, id: id, deliveryID: deliveryID, "reading the delivery", responder) { $0 }
        }
    }

    /// Due now again, delivered or failed ones too, with `retryWindow` more to succeed in.
    private func retry(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let id = Self.id(request, "id", responder), let deliveryID = Self.id(request, "delivery_id", responder) else { return }
        let now = clock()
        let until = now + retryWindow
        store.write({ database in
            try database.retryWebhookDelivery(deliveryID, endpointID: id, retryUntil: until, now: now)
        }) { [self] result in
            if case .success(.some) = result { wake?() }
            answer(result, id: id, deliveryID: deliveryID, "retrying the delivery", responder, status: .accepted) { WebhookDelivery($0) }
        }
    }

    // MARK: Shared

    private func answer<Record, Wire: Encodable>(_ result: Result<Record?, any Error>, id: Int64, deliveryID: Int64? = nil,
                                                 _ what: String, _ responder: APIResponder, status: HTTPStatus = .ok,
                                                 _ wire: (Record) -> Wire) {
        switch result {
        case .failure(let error): responder.respondInternalError(error, logger: logger, what)
        case .success(nil):
            responder.respond(deliveryID.map { Problem(.notFound, detail: "webhook \(id) has no delivery \($0)") } ?? Self.notFound(id))
        case .success(let record?): respond(wire(record), status: status, responder)
        }
    }

    private func respond(_ value: some Encodable, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(),
                         _ responder: APIResponder) {
        var headers = headers
        headers.set("Content-Type", "application/json")
        headers.set("Cache-Control", "no-store")
        responder.respond(HTTPResponse(status: status, headers: headers, body: JSONBody.encode(value)))
    }

    static func notFound(_ id: Int64) -> Problem {
        Problem(.notFound, detail: "no webhook has id \(id)")
    }

    /// A path id; a segment that is not one gets 404 as an unknown id does.
    static func id(_ request: HTTPRequest, _ name: String, _ responder: APIResponder) -> Int64? {
        guard let text = request.parameters[name], (1...16).contains(text.utf8.count),
              text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let id = Int64(text), id >= 1 else {
            responder.respond(Problem(.notFound, detail: name == "id" ? "no such webhook" : "no such delivery"))
            return nil
        }
        return id
    }

    static func integerQuery(_ request: HTTPRequest, _ name: String, in range: ClosedRange<Int64>) throws(Problem) -> Int64? {
        guard let text = request.queryValue(name) else { return nil }
        guard (1...19).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int64(text),
              range.contains(value) else {
            throw Problem(.malformedRequest, detail: "query parameter \(name) must be an integer from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}
