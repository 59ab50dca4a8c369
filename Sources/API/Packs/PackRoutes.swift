import Events
import Foundation
import Logging
import Packs
import Plan
import Server

/// `/v1/packs` and its per-pack actions: creation (validated, idempotent), listing, polling with
/// ETags, renaming, removal, suspend/resume and the failure list. State only: downloading is the
/// scheduler's, which hears of state changes through its `PackScheduling` hooks. Loop thread only.
public final class PackRoutes {
    public let store: any PackStore
    /// Where the state changes these routes make become events.
    public let events: PackEventPublisher
    let logger: Logger

    /// What runs downloads (Jobs' or the cluster's scheduler): told when a pack becomes `queued`,
    /// leaves `queued`/`active`, or is removed. nil: the API alone only keeps state. Weak.
    public private(set) weak var scheduling: (any PackScheduling)?
    /// Runs scheduled refreshes (Jobs' `PackRefresher`): told when a pack's schedule was set so
    /// it can wake earlier. nil: schedules are stored, and nothing here runs them. Weak.
    public private(set) weak var refreshes: (any RefreshScheduling)?
    /// The pack documents `GET /v1/packs/{id}` and the actions answer with.
    let reads: PackDocumentReads
    /// `Idempotency-Key`s of creations.
    private let idempotency = IdempotencyKeys()
    static let pageLimit = 500

    /// Stored times (creation, state changes, idempotency keys); tests inject their own.
    public let clock: WallClock

    public init(store: any PackStore, events: PackEventPublisher, scheduling: (any PackScheduling)?,
                refreshes: (any RefreshScheduling)? = nil, clock: WallClock = .system, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.clock = clock
        self.events = events
        self.scheduling = scheduling
        self.refreshes = refreshes
        self.logger = logger
        reads = PackDocumentReads(store: store, events: events, logger: logger)
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.post, "/v1/packs", role: .write, to: &router) { [unowned self] in create($0, $1) }
        routes.add(.get, "/v1/packs", role: .read, to: &router) { [unowned self] in list($0, $1) }
        let pack = routes.pack
        pack.add(.get, role: .read, to: &router) { [unowned self] in reads.respond($0, ifNoneMatch: $1.headers["If-None-Match"], $2) }
        pack.add(.patch, role: .write, to: &router) { [unowned self] in update($0, $1, $2) }
        pack.add(.delete, role: .write, to: &router) { [unowned self] in remove($0, $2) }
        pack.add(.post, "/suspend", role: .write, to: &router) { [unowned self] in changeState($0, $1, $2, to: .suspend) }
        pack.add(.post, "/resume", role: .write, to: &router) { [unowned self] in changeState($0, $1, $2, to: .resume) }
        pack.add(.get, "/errors", role: .read, to: &router) { [unowned self] in failures($0, $1, $2) }
    }

    // MARK: Create

    private func create(_ request: HTTPRequest, _ responder: APIResponder) {
        let body: PackCreateRequest
        let claim: IdempotencyKeys.Claim?
        do {
            body = try PackCreateRequest(body: request.body, contentType: request.headers["Content-Type"])
            claim = try idempotency.claim(request)
        } catch {
            return responder.respond(error)
        }
        let finish: (HTTPResponse) -> Void = { [self] response in
            idempotency.release(claim)
            responder.respond(response)
        }
        let region = body.region
        let maxTiles = body.limits.maxTiles
        let clock = clock
        store.read({ reader -> (replay: IdempotencyEntry?, tiles: CreationTileCount?) in
            if let claim, let entry = try IdempotencyKeys.storedAnswer(claim, reader: reader, now: clock.now) { return (entry, nil) }
            return (nil, CreationTileCount(region, limits: [maxTiles, try reader.tileLimit()].compactMap { $0 }))
        }) { [self] result in
            switch result {
            case .failure(let error):
                idempotency.release(claim)
                responder.respondInternalError(error, logger: logger, "reading the store")
            case .success(let check):
                if let entry = check.replay, let claim { return finish(IdempotencyKeys.replay(entry, for: claim)) }
                if let exceeded = check.tiles?.exceeded {
                    idempotency.release(claim)
                    return responder.respond(exceeded.problem, extra: ["tile_count": exceeded.count, "tile_limit": exceeded.limit])
                }
                insert(body, tileCount: check.tiles?.count, idempotency: claim, finish: finish)
            }
        }
    }

    private func insert(_ body: PackCreateRequest, tileCount: Int?, idempotency: IdempotencyKeys.Claim?,
                        finish: @escaping (HTTPResponse) -> Void) {
        let template = PackRecord(
            name: body.name ?? "", state: body.start ? .queued : .inactive, context: body.context,
            definition: body.region.mapLibreJSON, limits: body.limits,
            expectedResources: Int64(tileCount ?? 0), expectedTiles: Int64(tileCount ?? 0), expectedIsPrecise: tileCount != nil,
            refreshEvery: body.refresh?.every, startArea: body.startArea)
        let refresh = body.refresh
        let clock = clock
        store.write({ database in
            let now = clock.now
            var record = template
            var random = SystemRandomNumberGenerator()
            record.nextRefreshAt = refresh?.next(after: now, random: &random)
            record.id = try database.createPack(record, now: now)
            record.createdAt = now
            record.updatedAt = now
            let document = PackDocument(pack: record, progress: StoredProgress())
            if let idempotency { try IdempotencyKeys.store(idempotency, packID: record.id, body: document.body, into: database, now: now) }
            return document
        }) { [self] result in
            switch result {
            case .failure(let error):
                logger.error("creating a pack failed", metadata: ["error": "\(error)"])
                finish(.problem(Problem(.internalError, detail: "creating the pack failed; the server log has the details")))
            case .success(let document):
                finish(HTTPResponse(status: .created, headers: [
                    "Content-Type": "application/json", "Location": "/v1/packs/\(document.packID)", "ETag": document.etag,
                ], body: document.body))
                // A subscriber to `/v1/events` learns of the new pack as of any other state change.
                events.publishState(document.packID, state: document.state, previous: nil)
                if document.state == .queued { scheduling?.packQueued(document.packID) }
                if refresh != nil { refreshes?.rescheduled() }
            }
        }
    }

    // MARK: Read

    private func list(_ request: HTTPRequest, _ responder: APIResponder) {
        let query: PackListQuery
        do {
            query = try PackListQuery(request)
        } catch {
            return responder.respond(error)
        }
        let rates = events.allRates()
        let transfers = events.transfers()
        store.read({ reader in
            let packs = try reader.packs(after: query.after, state: query.state, nameContains: query.nameContains, limit: query.limit + 1)
            let documents = try packs.prefix(query.limit).map { pack in
                PackDocument.pack(pack, progress: try reader.progress(pack.id) ?? StoredProgress(), rate: rates[pack.id],
                                  transfers: transfers[pack.id] ?? .idle)
            }
            let next = packs.count > query.limit ? query.nextPath(after: packs[query.limit - 1].id) : nil
            return JSONBody.encode(PackList(packs: documents, next: next))
        }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "listing packs")
            case .success(let body): responder.respond(.json(bytes: body))
            }
        }
    }

    private func failures(_ packID: PackID, _ request: HTTPRequest, _ responder: APIResponder) {
        let limit: Int
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...1000).contains(value) else {
                return responder.respond(Problem(.malformedRequest, detail: "query parameter limit must be an integer from 1 to 1000"))
            }
            limit = value
        } else {
            limit = 100
        }
        let id = packID.rawValue
        store.read({ reader -> [UInt8]? in
            guard try reader.pack(id) != nil else { return nil }
            let total = try reader.progress(id)?.failedResources ?? 0
            let errors = try reader.failures(packID: id, limit: limit).map(ResourceErrorList.Entry.init)
            return JSONBody.encode(ResourceErrorList(errors: errors, total: max(total, Int64(errors.count))))
        }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack's errors")
            case .success(nil): responder.respond(PackRouteGroup.notFound(packID))
            case .success(let body?): responder.respond(.json(bytes: body))
            }
        }
    }

    // MARK: Change

    private func update(_ packID: PackID, _ request: HTTPRequest, _ responder: APIResponder) {
        let change: PackUpdateRequest
        do {
            change = try PackUpdateRequest(body: request.body, contentType: request.headers["Content-Type"])
        } catch {
            return responder.respond(error)
        }
        let name = change.name.map { $0 ?? "" }
        let context = change.context
        let refresh = change.refresh
        let clock = clock
        let id = packID.rawValue
        store.write({ database in
            let now = clock.now
            if name != nil || context != nil { try database.updatePack(id, name: name, context: context, now: now) }
            if let refresh {
                var random = SystemRandomNumberGenerator()
                try database.setRefresh(id, every: refresh?.every, next: refresh?.next(after: now, random: &random), now: now)
            }
        }) { [self] result in
            if case .failure(let error) = result {
                return responder.respondInternalError(error, logger: logger, "updating the pack")
            }
            // An unknown id changed nothing; the read answers 404 for it.
            reads.respond(packID, ifNoneMatch: request.headers["If-None-Match"], responder)
            if refresh != nil { refreshes?.rescheduled() }
        }
    }

    private func remove(_ packID: PackID, _ responder: APIResponder) {
        let id = packID.rawValue
        // Transfers stop before the rows go, so no write of the pack lands after its removal.
        scheduling?.packSuspended(id)
        let clock = clock
        store.write({ database in try database.transition(id, .delete, now: clock.now) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "removing the pack")
            case .success(.noSuchPack), .success(.refused): responder.respond(PackRouteGroup.notFound(packID))
            case .success(.applied):
                responder.respond(HTTPResponse(status: .noContent))
                packRemoved(id)
            }
        }
    }

    /// Publishes `pack_removed` and tells the scheduler (a DELETE or a storage reset).
    func packRemoved(_ packID: Int64) {
        events.packRemoved(packID)
        scheduling?.packRemoved(packID)
    }

    /// `suspend` and `resume`: the lifecycle decides (suspending a suspended pack changes
    /// nothing and still answers with the pack).
    private func changeState(_ packID: PackID, _ request: HTTPRequest, _ responder: APIResponder, to event: PackLifecycle.Event) {
        let id = packID.rawValue
        let clock = clock
        store.write({ database in try database.transition(id, event, now: clock.now) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "changing the pack's state")
            case .success(.noSuchPack): responder.respond(PackRouteGroup.notFound(packID))
            case .success(.refused(let refusal)): responder.respond(Problem(.conflict, detail: refusal.reason))
            case .success(.applied(let transition)):
                perform(transition, packID: id)
                reads.respond(packID, ifNoneMatch: request.headers["If-None-Match"], responder)
            }
        }
    }

    /// The loop side of a committed transition the API made: its events, then the scheduler.
    func perform(_ transition: PackLifecycle.Transition, packID: Int64) {
        events.publish(transition, packID: packID)
        for action in transition.loopActions {
            switch action {
            case .enqueue: scheduling?.packQueued(packID)
            case .stopTransfers: scheduling?.packSuspended(packID)
            default: break
            }
        }
    }
}
