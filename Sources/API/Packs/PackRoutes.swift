import Cryptography
import Foundation
import Geo
import Logging
import Packs
import Plan
import Server

/// `/v1/packs` and its per-pack actions: creation (validated, idempotent), listing, polling with
/// ETags, renaming, removal, suspend/resume and the failure list. State only: downloading is the
/// scheduler's, which hears of state changes through its
/// `PackScheduling` hooks. Loop thread only.
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
    /// Rendered packs `GET /v1/packs/{id}` answers from without a read (see its tags).
    var documents: PackDocumentCache { events.documents }
    /// The read under way for a pack, which polls under the same tag join.
    private var readsInFlight: [Int64: PackRead] = [:]

    /// `Idempotency-Key`s (scoped) of creations still running: a retry meanwhile gets 409.
    private var creationsInFlight: Set<String> = []
    /// How long an `Idempotency-Key` is honoured.
    static let idempotencyRetention: Int64 = 86_400
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
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.post, "/v1/packs", role: .write, to: &router) { [unowned self] in create($0, $1) }
        routes.add(.get, "/v1/packs", role: .read, to: &router) { [unowned self] in list($0, $1) }
        routes.add(.get, "/v1/packs/{id}", role: .read, to: &router) { [unowned self] in get($0, $1) }
        routes.add(.patch, "/v1/packs/{id}", role: .write, to: &router) { [unowned self] in update($0, $1) }
        routes.add(.delete, "/v1/packs/{id}", role: .write, to: &router) { [unowned self] in remove($0, $1) }
        routes.add(.post, "/v1/packs/{id}/suspend", role: .write, to: &router) { [unowned self] in changeState($0, $1, to: .suspend) }
        routes.add(.post, "/v1/packs/{id}/resume", role: .write, to: &router) { [unowned self] in changeState($0, $1, to: .resume) }
        routes.add(.get, "/v1/packs/{id}/errors", role: .read, to: &router) { [unowned self] in failures($0, $1) }
    }

    // MARK: Create

    /// What the pool found before a creation: an earlier answer for the key, and the tile count.
    private struct CreationCheck: Sendable {
        var replay: IdempotencyEntry?
        var tileCount: Int?
        var exceeded: (count: Int, limit: Int64)?
    }

    private func create(_ request: HTTPRequest, _ responder: APIResponder) {
        let body: PackCreateRequest
        do {
            body = try PackCreateRequest(body: request.body, contentType: request.headers["Content-Type"])
        } catch {
            return responder.respond(error)
        }
        var keyInScope: String?
        if let key = request.headers["Idempotency-Key"] {
            guard (1...255).contains(key.utf8.count) else {
                return responder.respond(Problem(.malformedRequest, detail: "Idempotency-Key must be 1 to 255 characters"))
            }
            // Keys are per API key: the same key from two clients names two requests.
            let scope = SHA256.hash(Array((request.headers["Authorization"] ?? "").utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
            keyInScope = scope + ":" + key
            guard !creationsInFlight.contains(scope + ":" + key) else {
                return responder.respond(Problem(.idempotencyKeyInUse, detail: "a request with this Idempotency-Key is still being processed"))
            }
        }
        let scopedKey = keyInScope
        let requestHash = SHA256.hash(request.body).map { String(format: "%02x", $0) }.joined()
        if let scopedKey { creationsInFlight.insert(scopedKey) }
        let finish: (HTTPResponse) -> Void = { [self] response in
            if let scopedKey { creationsInFlight.remove(scopedKey) }
            responder.respond(response)
        }
        let region = body.region
        let maxTiles = body.limits.maxTiles
        let clock = clock
        store.read({ reader in
            var check = CreationCheck()
            if let scopedKey, let entry = try reader.idempotencyEntry(scopedKey),
               entry.createdAt >= clock.now - Self.idempotencyRetention {
                check.replay = entry
                return check
            }
            let globalLimit = try reader.tileLimit()
            Self.countTiles(region, limits: [maxTiles, globalLimit].compactMap { $0 }, into: &check)
            return check
        }) { [self] result in
            switch result {
            case .failure(let error):
                if let scopedKey { creationsInFlight.remove(scopedKey) }
                responder.respondInternalError(error, logger: logger, "reading the store")
            case .success(let check):
                if let entry = check.replay {
                    if let scopedKey { creationsInFlight.remove(scopedKey) }
                    return replay(entry, requestHash: requestHash, responder)
                }
                if let exceeded = check.exceeded {
                    if let scopedKey { creationsInFlight.remove(scopedKey) }
                    return responder.respond(
                        Problem(.tileLimitExceeded, detail: "the region covers \(exceeded.count > exceeded.limit ? "" : "more than ")\(exceeded.count) tiles; the limit is \(exceeded.limit)"),
                        extra: ["tile_count": exceeded.count, "tile_limit": exceeded.limit])
                }
                insert(body, tileCount: check.tileCount, idempotency: scopedKey.map { ($0, requestHash) }, finish: finish)
            }
        }
    }

    /// Counts a template region's tiles against the smallest of `limits` (a style region's count
    /// needs its documents: the download engine checks it). Bounds counts are closed-form, so an
    /// exceeding bounds region reports its exact count; a geometry reports `limit + 1` ("more than").
    private static func countTiles(_ region: RegionDefinition, limits: [Int64], into check: inout CreationCheck) {
        guard case .tiles = region.content else { return }
        let lower = Int(region.minZoom.rounded(.down))
        let zooms = lower...max(lower, Int((region.maxZoom ?? region.minZoom).rounded(.down)))
        // Without a limit the count is only for `expected_resources`; stop at a sane ceiling.
        let limit = limits.min()
        let ceiling = Int(clamping: limit ?? 10_000_000)
        if let count = WebMercator.tileCount(region: region.area, zooms: zooms, limit: ceiling) {
            check.tileCount = count
        } else if let limit {
            let exact: Int
            if case .bounds = region.area { exact = WebMercator.tileCount(region: region.area, zooms: zooms) } else { exact = ceiling.saturatingIncrement }
            check.exceeded = (exact, limit)
        }
    }

    private func replay(_ entry: IdempotencyEntry, requestHash: String, _ responder: APIResponder) {
        guard entry.requestHash == requestHash else {
            return responder.respond(Problem(.idempotencyKeyReused, detail: "this Idempotency-Key was used with a different body"))
        }
        var headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotent-Replayed": "true", "ETag": PackDocument.etag(of: entry.body)]
        if let packID = entry.packID { headers.set("Location", "/v1/packs/\(packID)") }
        responder.respond(HTTPResponse(status: HTTPStatus(Int(entry.status), entry.status == 201 ? "Created" : "OK"), headers: headers, body: entry.body))
    }

    private func insert(_ body: PackCreateRequest, tileCount: Int?, idempotency: (key: String, hash: String)?, finish: @escaping (HTTPResponse) -> Void) {
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
            if let idempotency {
                try database.storeIdempotencyKey(idempotency.key, requestHash: idempotency.hash, packID: record.id, status: 201,
                                                 body: document.body, now: now, retention: Self.idempotencyRetention)
            }
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

    private func get(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = Self.packID(request, responder) else { return }
        respondWithPack(packID, request: request, responder)
    }

    /// Answers with the pack as it is now (200 with ETag, or 304 when `If-None-Match` matches).
    private func respondWithPack(_ packID: Int64, request: HTTPRequest, status: HTTPStatus = .ok, _ responder: APIResponder) {
        let answer = { (body: [UInt8], etag: String) in
            if status == .ok, let tags = request.headers["If-None-Match"], Self.matches(tags, etag) {
                return responder.respond(HTTPResponse(status: .notModified, headers: ["ETag": etag]))
            }
            responder.respond(HTTPResponse(status: status, headers: ["Content-Type": "application/json", "ETag": etag], body: body))
        }
        let finish = { [self] (result: Result<(body: [UInt8], etag: String)?, any Error>) in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack")
            case .success(nil): responder.respond(Self.notFound(packID))
            case .success(let document?): answer(document.body, document.etag)
            }
        }
        // The tag is taken before the read, so a write that lands meanwhile keeps the result out.
        let tag = documents.tag(packID, storeChanges: store.documentChanges(of: packID))
        if let cached = documents.entry(packID, current: tag) { return finish(.success((cached.body, cached.etag))) }
        // Every commit that touches the pack moves its tag: the polls arriving until the first
        // read lands share it rather than each sending a read to the pool.
        if let read = readsInFlight[packID], read.tag == tag { return read.waiters.append(finish) }
        let read = PackRead(tag: tag, first: finish)
        readsInFlight[packID] = read
        let rate = events.rate(of: packID)
        let transfers = events.transfers()[packID] ?? .idle
        store.read({ reader in
            try Self.document(packID, reader, rate: rate, transfers: transfers)
                .map { (body: $0.body, etag: $0.etag, active: $0.state == .active) }
        }) { [self] result in
            if readsInFlight[packID] === read { readsInFlight[packID] = nil }
            if case .success(let document?) = result {
                documents.fill(packID, body: document.body, etag: document.etag, active: document.active, tag: tag,
                               current: documents.tag(packID, storeChanges: store.documentChanges(of: packID)))
            }
            let shared = result.map { $0.map { (body: $0.body, etag: $0.etag) } }
            for waiter in read.waiters { waiter(shared) }
        }
    }

    /// One pool read of a pack under one cache tag and the polls waiting for it.
    private final class PackRead {
        let tag: PackDocumentCache.Tag
        var waiters: [(Result<(body: [UInt8], etag: String)?, any Error>) -> Void]

        init(tag: PackDocumentCache.Tag, first: @escaping (Result<(body: [UInt8], etag: String)?, any Error>) -> Void) {
            self.tag = tag
            waiters = [first]
        }
    }

    static func document(_ packID: Int64, _ reader: any StoreReading & PackExporting, rate: RollingRate? = nil,
                         transfers: PackTransferStatus? = nil) throws -> PackDocument? {
        guard let pack = try reader.pack(packID) else { return nil }
        return PackDocument(pack: pack, progress: try reader.progress(packID) ?? StoredProgress(), rate: rate, transfers: transfers)
    }

    /// RFC 9110 §13.1.2: `*` or any listed tag (weak comparison).
    static func matches(_ header: String, _ etag: String) -> Bool {
        header.split(separator: ",").contains { candidate in
            let tag = candidate.trimmingCharacters(in: .whitespaces)
            return tag == "*" || tag == etag || tag == "W/" + etag
        }
    }

    private func failures(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = Self.packID(request, responder) else { return }
        let limit: Int
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...1000).contains(value) else {
                return responder.respond(Problem(.malformedRequest, detail: "query parameter limit must be an integer from 1 to 1000"))
            }
            limit = value
        } else {
            limit = 100
        }
        store.read({ reader -> [UInt8]? in
            guard try reader.pack(packID) != nil else { return nil }
            let total = try reader.progress(packID)?.failedResources ?? 0
            let errors = try reader.failures(packID: packID, limit: limit).map(ResourceErrorList.Entry.init)
            return JSONBody.encode(ResourceErrorList(errors: errors, total: max(total, Int64(errors.count))))
        }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack's errors")
            case .success(nil): responder.respond(Self.notFound(packID))
            case .success(let body?): responder.respond(.json(bytes: body))
            }
        }
    }

    // MARK: Change

    private func update(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = Self.packID(request, responder) else { return }
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
        store.write({ database in
            let now = clock.now
            if name != nil || context != nil { try database.updatePack(packID, name: name, context: context, now: now) }
            if let refresh {
                var random = SystemRandomNumberGenerator()
                try database.setRefresh(packID, every: refresh?.every, next: refresh?.next(after: now, random: &random), now: now)
            }
        }) { [self] result in
            if case .failure(let error) = result {
                return responder.respondInternalError(error, logger: logger, "updating the pack")
            }
            // An unknown id changed nothing; the read answers 404 for it.
            respondWithPack(packID, request: request, status: .ok, responder)
            if refresh != nil { refreshes?.rescheduled() }
        }
    }

    private func remove(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = Self.packID(request, responder) else { return }
        // Transfers stop before the rows go, so no write of the pack lands after its removal.
        scheduling?.packSuspended(packID)
        let clock = clock
        store.write({ database in try database.transition(packID, .delete, now: clock.now) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "removing the pack")
            case .success(.noSuchPack), .success(.refused): responder.respond(Self.notFound(packID))
            case .success(.applied):
                responder.respond(HTTPResponse(status: .noContent))
                packRemoved(packID)
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
    private func changeState(_ request: HTTPRequest, _ responder: APIResponder, to event: PackLifecycle.Event) {
        guard let packID = Self.packID(request, responder) else { return }
        let clock = clock
        store.write({ database in try database.transition(packID, event, now: clock.now) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "changing the pack's state")
            case .success(.noSuchPack): responder.respond(Self.notFound(packID))
            case .success(.refused(let refusal)): responder.respond(Problem(.conflict, detail: refusal.reason))
            case .success(.applied(let transition)):
                perform(transition, packID: packID)
                respondWithPack(packID, request: request, status: .ok, responder)
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

    // MARK: Shared

    /// The `{id}` parameter as a pack id; a segment that is not one gets 404 as an unknown id does.
    static func packID(_ request: HTTPRequest, _ responder: APIResponder) -> Int64? {
        guard let text = request.parameters["id"], text.utf8.count <= 16, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
              let id = Int64(text), id >= 1, id <= 9_007_199_254_740_991 else {
            responder.respond(Problem(.notFound, detail: "no such pack"))
            return nil
        }
        return id
    }

    static func notFound(_ packID: Int64) -> Problem {
        Problem(.notFound, detail: "no pack has id \(packID)")
    }
}

extension Int {
    fileprivate var saturatingIncrement: Int { self == .max ? .max : self + 1 }
}
