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
    public let events: EventBroadcaster
    let logger: Logger

    /// What runs downloads (Jobs' scheduler, wired by `packd`): told when a pack becomes `queued`,
    /// leaves `queued`/`active`, or is removed. nil until wired (the API alone then only keeps state).
    public weak var scheduling: (any PackScheduling)?
    /// Runs scheduled refreshes; told when a pack's schedule was set so it can wake earlier.
    public weak var refreshes: (any RefreshScheduling)?
    /// The API's own caches of removed packs (offline serving), told before the scheduler.
    var removalObservers: [(Int64) -> Void] = []
    /// What the fetcher is doing for each pack it holds transfers or a throttle for
    /// (`transfers_in_flight`, `throttled`): `packd` wires its fetcher. nil: every pack is idle.
    public var transferStatuses: (() -> [Int64: PackTransferStatus])?

    /// Rolling rates of committed progress, for `bytes_per_second` and `eta_seconds`.
    private var progressRates = ProgressRates()
    /// What the events last said of each pack. Writes already in flight when a pack is
    /// suspended commit after its `state` event: their `progress` event then names the state the
    /// pack is in and keeps its expected counts (the scheduler no longer knows them), and one
    /// that commits after a delete is not published at all. Loop thread only; one small entry
    /// per pack seen since start.
    private var published: [Int64: PublishedPack] = [:]

    private struct PublishedPack {
        var state = PackState.active
        var expected: ExpectedCounts?
        var removed = false
        /// The last committed progress an event carried, for a `progress` event when only the
        /// transfers changed.
        var progress: StoredProgress?
        var transfers = PackTransferStatus.idle
    }
    /// Rendered packs `GET /v1/packs/{id}` answers from without a read (see its tags).
    let documents = PackDocumentCache()
    /// The read under way for a pack, which polls under the same tag join.
    private var readsInFlight: [Int64: PackRead] = [:]
    /// Monotonic seconds for the rates; tests set a clock of their own.
    var seconds: () -> Double = PackRoutes.monotonicSeconds
    private static let clockOrigin = ContinuousClock.now

    /// `Idempotency-Key`s (scoped) of creations still running: a retry meanwhile gets 409.
    private var creationsInFlight: Set<String> = []
    /// How long an `Idempotency-Key` is honoured.
    static let idempotencyRetention: Int64 = 86_400
    static let pageLimit = 500

    /// Stored times (creation, state changes, idempotency keys); tests inject their own.
    public let clock: WallClock

    public init(store: any PackStore, events: EventBroadcaster, clock: WallClock = .system, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.clock = clock
        self.events = events
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
                logger.error("creating a pack failed: \(error)")
                finish(.problem(Problem(.internalError, detail: "creating the pack failed; the server log has the details")))
            case .success(let document):
                finish(HTTPResponse(status: .created, headers: [
                    "Content-Type": "application/json", "Location": "/v1/packs/\(document.packID)", "ETag": document.etag,
                ], body: document.body))
                // A subscriber to `/v1/events` learns of the new pack as of any other state change.
                publishState(document.packID, state: document.state, previous: nil)
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
        let rates = progressRates.rates(now: seconds())
        let transfers = transferStatuses?() ?? [:]
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
        let rate = progressRates.rate(packID: packID, now: seconds())
        let transfers = transferStatuses?()[packID] ?? .idle
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
        progressRates.forget(packID: packID)
        published[packID] = PublishedPack(removed: true)
        documents.invalidate(packID)
        events.publish(.packRemoved(PackRemovedEvent(packID: packID)))
        for observer in removalObservers { observer(packID) }
        scheduling?.packRemoved(packID)
    }

    /// Events any node committed, as they reach this one (cluster mode): the state each pack is
    /// in (which this node's own progress events and rates go by) and the packs another node
    /// removed (offline serving forgets them at once, as for a delete on this node).
    public func learn(from events: [BroadcastEvent]) {
        for event in events {
            switch event.kind {
            case .state:
                guard let state = try? JSONDecoder().decode(StateEvent.self, from: Data(event.payload)),
                      published[event.packID]?.removed != true else { continue }
                if state.state != .active { progressRates.forget(packID: event.packID) }
                published[event.packID, default: PublishedPack()].state = state.state
            case .packRemoved:
                guard published[event.packID]?.removed != true else { continue }
                progressRates.forget(packID: event.packID)
                published[event.packID] = PublishedPack(removed: true)
                documents.invalidate(event.packID)
                for observer in removalObservers { observer(event.packID) }
            default:
                break
            }
        }
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
        publish(transition, packID: packID)
        for action in transition.loopActions {
            switch action {
            case .enqueue: scheduling?.packQueued(packID)
            case .stopTransfers: scheduling?.packSuspended(packID)
            default: break
            }
        }
    }

    /// The events of a committed transition, whoever made it (the API, or the scheduler through
    /// `packd`'s wiring).
    public func publish(_ transition: PackLifecycle.Transition, packID: Int64) {
        for action in transition.loopActions {
            switch action {
            case .publishState:
                if let state = transition.to { publishState(packID, state: state, previous: transition.from, error: transition.error) }
            case .publishTileLimitExceeded: publishTileLimitExceeded(packID)
            case .publishRemoved: packRemoved(packID)
            default: break
            }
        }
        // The versions its completion cut: this pack's, and those of packs sharing rows it changed.
        publishVersions(transition.createdVersions)
    }

    /// A `version_created` event (and a log line) per version cut, by a completion or an import.
    func publishVersions(_ versions: [PackVersion]) {
        for version in versions {
            documents.invalidate(version.packID)
            events.publish(.versionCreated(VersionCreatedEvent(packID: version.packID, version: PackVersionSummary(version))))
            logger.info("pack version created", metadata: ["pack_id": "\(version.packID)", "version": "\(version.version)",
                                                           "changed_resources": "\(version.changedResources)",
                                                           "removed_resources": "\(version.removedResources)"])
        }
    }

    /// A `state` event: never coalesced; the broadcaster's log hook makes it durable.
    /// `previous` is nil for a pack just created.
    func publishState(_ packID: Int64, state: PackState, previous: PackState?, error: PackError? = nil) {
        // A rate describes one stretch of downloading; the next starts afresh.
        if state != .active { progressRates.forget(packID: packID) }
        published[packID, default: PublishedPack()].state = state
        documents.invalidate(packID)
        events.publish(.state(StateEvent(packID: packID, state: state, previousState: previous, error: error)))
        var fields: Logger.Metadata = ["pack_id": "\(packID)", "to": "\(state.rawValue)"]
        if let previous { fields["from"] = "\(previous.rawValue)" }
        if let error { fields["error_code"] = "\(error.code.rawValue)" }
        logger.info("pack state changed", metadata: fields)
    }

    /// What an import added (a `state` event, as for a created pack) or changed, each with a
    /// `progress` event of what it now holds, so a dashboard on `/v1/events` sees them.
    func packsImported(_ changed: [ImportJob.Changed]) {
        for pack in changed {
            if pack.added {
                publishState(pack.record.id, state: pack.record.state, previous: nil)
            } else {
                // The event carries the state the pack has, not what this server last published.
                published[pack.record.id, default: PublishedPack()].state = pack.record.state
            }
            publishProgress(pack.record.id, progress: pack.progress, expected: pack.record.expected)
        }
    }

    /// The `tile_limit_exceeded` event after the state event that failed the pack: the pack's own
    /// `limits.max_tiles` with the tiles its region needs when that is what stopped it, else the
    /// server's tile limit with the tiles all packs hold.
    private func publishTileLimitExceeded(_ packID: Int64) {
        store.read({ reader -> (count: Int64, maximum: Int64)? in
            guard let record = try reader.pack(packID) else { return nil }
            if let maxTiles = record.maxTiles, record.expectedTiles > maxTiles {
                return (record.expectedTiles, maxTiles)
            }
            guard let limit = try reader.tileLimit() else { return nil }
            return (try reader.linkedTileCount(), limit)
        }) { [self] result in
            switch result {
            case .failure(let error):
                logger.warning("reading the tile limit for pack \(packID)'s event failed: \(error)")
            case .success(nil):
                break
            case .success(let numbers?):
                guard published[packID]?.removed != true else { return }
                events.publish(.tileLimitExceeded(TileLimitExceededEvent(packID: packID, count: numbers.count,
                                                                         maximum: numbers.maximum)))
            }
        }
    }

    /// Publishes a committed progress change in the same `progress` shape `GET /v1/packs/{id}`
    /// returns, so an event and a poll never disagree on fields. `expectedResources` is 0 and
    /// `precise` false while the plan is not known yet, as in the pack document.
    /// The commit also feeds the pack's rolling rate, which the event and later polls carry.
    /// `expected` is nil when the caller no longer knows it (a commit that lands after its
    /// download stopped): the last published counts are kept.
    public func publishProgress(_ packID: Int64, progress: StoredProgress, expected: ExpectedCounts?) {
        var pack = published[packID, default: PublishedPack()]
        guard !pack.removed else { return }
        if let expected { pack.expected = expected }
        pack.progress = progress
        pack.transfers = transferStatuses?()[packID] ?? .idle
        published[packID] = pack
        let now = seconds()
        progressRates.record(packID: packID, progress: progress, now: now)
        // The commit already moved the store's tag; the new rate moves the local one.
        documents.invalidate(packID)
        publishProgressEvent(packID, pack)
    }

    /// The `progress` event of what `pack` holds; as in the pack document, a rate and transfers
    /// only while the pack is downloading.
    private func publishProgressEvent(_ packID: Int64, _ pack: PublishedPack) {
        guard let progress = pack.progress else { return }
        let active = pack.state == .active
        let rate = active ? progressRates.rate(packID: packID, now: seconds()) : nil
        let expected = pack.expected ?? ExpectedCounts(resources: 0, tiles: 0, precise: false)
        events.publish(.progress(ProgressEvent(packID: packID, state: pack.state,
                                               progress: PackDocument.progress(progress, expected: expected, rate: rate,
                                                                               transfers: active ? pack.transfers : nil))))
    }

    /// A `progress` event for a pack nothing was committed for since start: with what the store
    /// holds (a resumed pack is not at zero).
    private func publishStoredProgress(_ packID: Int64) {
        store.read({ reader in try reader.progress(packID) }) { [self] result in
            guard case .success(let progress?) = result, var pack = published[packID], !pack.removed else { return }
            // A commit published meanwhile carries newer counts and the transfers already.
            guard pack.progress == nil else { return }
            pack.progress = progress
            published[packID] = pack
            publishProgressEvent(packID, pack)
        }
    }

    /// Publishes a `progress` event for each downloading pack whose upstreams started or stopped
    /// holding it back (or whose transfers all stopped or resumed) since its last event: a host
    /// pausing the pack with `Retry-After` stops its commits, so no commit would tell. Called
    /// periodically (`PackdAPI`).
    func publishTransferChanges() {
        guard let transferStatuses else { return }
        let statuses = transferStatuses()
        for (packID, pack) in published where pack.state == .active && !pack.removed {
            let now = statuses[packID] ?? .idle
            let before = pack.transfers
            guard now.throttled != before.throttled || (now.transfersInFlight == 0) != (before.transfersInFlight == 0) else {
                continue
            }
            published[packID]?.transfers = now
            // A poll's document shows the change too, not one cached before it.
            documents.invalidate(packID)
            if pack.progress != nil {
                publishProgressEvent(packID, published[packID] ?? pack)
            } else {
                publishStoredProgress(packID)
            }
        }
    }

    /// A `resource_error` event: one failed request of a download (`url` is the canonical URL,
    /// without an upstream rule's credentials). Dropped once the pack is removed.
    public func publishStartAreaReady(_ event: StartAreaReadyEvent) {
        guard published[event.packID]?.removed != true else { return }
        events.publish(.startAreaReady(event))
    }

    public func publishResourceError(_ failure: ResourceErrorEvent) {
        guard published[failure.packID]?.removed != true else { return }
        events.publish(.resourceError(failure))
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


    static func monotonicSeconds() -> Double {
        let elapsed = clockOrigin.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }
}

extension Int {
    fileprivate var saturatingIncrement: Int { self == .max ? .max : self + 1 }
}
