import Events
import Foundation
import Logging
import Packs
import Server

/// How `GET /v1/packs/{id}` (and the actions that answer with the pack) get a pack's document:
/// from the cache on the loop when its tag still holds, else one pool read that every poll
/// arriving under the same tag joins. Answers `200` with the ETag, `304` for a matching
/// `If-None-Match`, or `404`. Loop thread only.
final class PackDocumentReads {
    let store: any PackStore
    let events: PackEventPublisher
    let logger: Logger
    /// Rendered packs answered without a read (see its tags); the publisher tells it what changed
    /// without a write.
    let documents = PackDocumentCache()
    /// The read under way for a pack, which polls under the same tag join.
    private var inFlight: [PackID: PackRead] = [:]

    typealias Document = (body: [UInt8], etag: String)

    init(store: any PackStore, events: PackEventPublisher, logger: Logger) {
        self.store = store
        self.events = events
        self.logger = logger
        events.documentChangeObservers.append { [documents] in documents.invalidate($0) }
    }

    /// Answers with the pack as it is now: `status` with the ETag, or `304` for a `200` when
    /// `ifNoneMatch` (the request's `If-None-Match`, when it may revalidate) names it.
    func respond(_ packID: PackID, status: HTTPStatus = .ok, ifNoneMatch: String?, _ responder: APIResponder) {
        read(packID) { [logger] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack")
            case .success(nil): responder.respond(PackRouteGroup.notFound(packID))
            case .success(let document?):
                if status == .ok, let tags = ifNoneMatch, ImmutableFileAnswer.matchesAny(tags, etag: document.etag, weak: true) {
                    return responder.respond(HTTPResponse(status: .notModified, headers: ["ETag": document.etag]))
                }
                responder.respond(HTTPResponse(status: status, headers: ["Content-Type": "application/json", "ETag": document.etag],
                                               body: document.body))
            }
        }
    }

    private func read(_ packID: PackID, _ finish: @escaping (Result<Document?, any Error>) -> Void) {
        let id = packID.rawValue
        // The tag is taken before the read, so a write that lands meanwhile keeps the result out.
        let tag = documents.tag(id, storeChanges: store.documentChanges(of: id))
        if let cached = documents.entry(id, current: tag) { return finish(.success((cached.body, cached.etag))) }
        // Every commit that touches the pack moves its tag: the polls arriving until the first
        // read lands share it rather than each sending a read to the pool.
        if let read = inFlight[packID], read.tag == tag { return read.waiters.append(finish) }
        let read = PackRead(tag: tag, first: finish)
        inFlight[packID] = read
        let rate = events.rate(of: id)
        let transfers = events.transfers()[id] ?? .idle
        store.read({ reader in
            try Self.document(id, reader, rate: rate, transfers: transfers)
                .map { (body: $0.body, etag: $0.etag, active: $0.state == .active) }
        }) { [self] result in
            if inFlight[packID] === read { inFlight[packID] = nil }
            if case .success(let document?) = result {
                documents.fill(id, body: document.body, etag: document.etag, active: document.active, tag: tag,
                               current: documents.tag(id, storeChanges: store.documentChanges(of: id)))
            }
            let shared = result.map { $0.map { (body: $0.body, etag: $0.etag) } }
            for waiter in read.waiters { waiter(shared) }
        }
    }

    /// One pool read of a pack under one cache tag and the polls waiting for it.
    private final class PackRead {
        let tag: PackDocumentCache.Tag
        var waiters: [(Result<Document?, any Error>) -> Void]

        init(tag: PackDocumentCache.Tag, first: @escaping (Result<Document?, any Error>) -> Void) {
            self.tag = tag
            waiters = [first]
        }
    }

    /// The pack's document from `reader`, nil when there is no such pack. Pool thread.
    static func document(_ packID: Int64, _ reader: any StoreReading & PackExporting, rate: RollingRate? = nil,
                         transfers: PackTransferStatus? = nil) throws -> PackDocument? {
        guard let pack = try reader.pack(packID) else { return nil }
        return PackDocument(pack: pack, progress: try reader.progress(packID) ?? StoredProgress(), rate: rate, transfers: transfers)
    }
}
