import Foundation
import Jobs
import Logging
import Loop
import Packs
import Plan
import Server

/// One `POST /v1/estimates` of a style region, on the loop thread: Jobs' document phase (the one
/// downloads use) fetches the style and then its TileJSONs through the server's upstream client,
/// one attempt each, at most 8 TileJSONs at once, parsing on the thread pool; then the counts are
/// made on the pool. Answers exactly once: the first upstream failure ends the job.
final class EstimateJob: DocumentSource {
    /// The style: at most the planner's document size, and a deadline per request.
    static let documentLimits = UpstreamLimits(maxBodyBytes: PlanLimits().maxDocumentBytes, timeout: .seconds(15))
    /// A TileJSON is a few kilobytes; a style may name a thousand of them, so each is held to less.
    static let tileJSONLimits = UpstreamLimits(maxBodyBytes: 4 << 20, timeout: .seconds(15))
    /// TileJSONs fetched at once, so one estimate holds at most this many bodies in flight and
    /// leaves the fetcher's slots to downloads.
    static let tileJSONConcurrency = 8
    /// All documents of one estimate together.
    static let maximumTotalBytes = 64 << 20

    private let store: any PackStore
    private let loop: EventLoop
    /// Nil for a tiles region, which needs no document.
    private let client: (any UpstreamClient)?
    private let responder: APIResponder
    private let logger: Logger
    private let region: RegionDefinition
    private var phase: DocumentPhase?
    private var answered = false

    init(region: RegionDefinition, store: any PackStore, loop: EventLoop, client: (any UpstreamClient)?, responder: APIResponder,
         logger: Logger) {
        self.store = store
        self.loop = loop
        self.client = client
        self.responder = responder
        self.logger = logger
        self.region = region
    }

    /// Runs the document phase; the job keeps itself alive through its callbacks until it answers.
    func start() {
        if region.needsDocuments, client == nil {
            answered = true
            return responder.respond(Problem(.unavailable, detail: "no upstream access"))
        }
        // A PMTiles archive's TileJSON comes from its header and metadata, read with ranges.
        let source = client.map { ArchiveDocuments(inner: self, loop: loop, ranges: UpstreamArchiveRanges(client: $0), limits: ArchiveLimits()) }
        let phase = DocumentPhase(region: region, loop: loop, source: source ?? self, limits: .init(
            maxDocumentBytes: Self.documentLimits.maxBodyBytes, maxTotalBytes: Self.maximumTotalBytes,
            concurrency: Self.tileJSONConcurrency))
        self.phase = phase
        phase.run { [self] result in
            self.phase = nil
            switch result {
            case .success(let builder): count(builder)
            case .failure(let failure): answer(failure)
            }
        }
    }

    /// Counts and samples stored sizes on the pool.
    private func count(_ builder: PlanBuilder) {
        guard !answered else { return }
        store.read({ reader -> [UInt8] in
            // `"glyphs": "region"` chooses its ranges from stored tiles: every candidate is counted
            // (an upper bound of what the pack downloads).
            let estimate = RegionEstimate(plan: builder.plan.withEveryGlyphRange, region: builder.region, style: builder.style)
            return JSONBody.encode(try estimate.document(reader))
        }) { [self] result in
            guard !answered else { return }
            answered = true
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "estimating the region")
            case .success(let body): responder.respond(.json(bytes: body))
            }
        }
    }

    /// One document through the upstream client; a 2xx body, or why not in the words the
    /// problem will use.
    func document(_ resource: PlannedResource, then: @escaping (Result<[UInt8], DocumentFailure>) -> Void) {
        let url = resource.url
        client?.get(url, limits: resource.kind == .style ? Self.documentLimits : Self.tileJSONLimits) { result in
            switch result {
            case .success(let response) where (200..<300).contains(response.status) && response.status != 204:
                then(.success(response.body))
            case .success(let response):
                then(.failure(.unavailable(url: url, status: response.status,
                                           detail: "the upstream answered \(response.status) for \(Self.shown(url))")))
            case .failure(let failure) where failure.hostNotAllowed:
                then(.failure(.hostNotAllowed(url: url)))
            case .failure(let failure):
                then(.failure(.unavailable(url: url, status: nil, detail: "fetching \(Self.shown(url)) failed: \(failure.code)")))
            }
        }
    }

    private func answer(_ failure: DocumentFailure) {
        guard !answered else { return }
        answered = true
        switch failure {
        case .unavailable(let url, let status, let detail):
            var extra: [String: Any] = ["url": Self.shown(url)]
            if let status { extra["upstream_status"] = status }
            responder.respond(Problem(.upstreamFailed, detail: detail), extra: extra)
        case .unauthorized(let url, let status):
            responder.respond(Problem(.upstreamFailed, detail: "the upstream answered \(status) for \(Self.shown(url))"),
                              extra: ["upstream_status": status, "url": Self.shown(url)])
        case .hostNotAllowed(let url):
            let errors: [Problem.FieldError]? = url == region.styleURL
                ? [.init(pointer: "/region/style_url", detail: "the host is not an allowed upstream host")] : nil
            responder.respond(Problem(.hostNotAllowed, detail: "\(Self.shown(url)) is on an address this server may not reach",
                                      errors: errors), extra: ["url": Self.shown(url)])
        case .tooLarge(let url, let detail):
            responder.respond(Problem(.upstreamFailed, detail: detail), extra: ["url": Self.shown(url)])
        case .archive(.hostNotAllowed(let url)):
            let errors: [Problem.FieldError]? = Self.isRegionArchive(url, region)
                ? [.init(pointer: "/region/pmtiles", detail: "the host is not an allowed upstream host")] : nil
            responder.respond(Problem(.hostNotAllowed, detail: "\(Self.shown(url)) is on an address this server may not reach",
                                      errors: errors), extra: ["url": Self.shown(url)])
        case .archive(let failure):
            // The archive's server, or the archive, cannot be read: the pack would fail the same way.
            let error = failure.packError
            var extra: [String: Any] = ["url": Self.shown(error.url ?? "")]
            if let status = error.status { extra["upstream_status"] = status }
            responder.respond(Problem(.upstreamFailed, detail: error.detail), extra: extra)
        case .invalid(let error):
            // A document the upstream served that the planner refuses (not JSON, no tiles…).
            responder.respond(Problem(.upstreamFailed, detail: "the upstream's document cannot be used: \(error.description)"),
                              extra: ["url": Self.shown(error.url ?? region.styleURL ?? "")])
        }
    }

    private static func isRegionArchive(_ url: String, _ region: RegionDefinition) -> Bool {
        if case .archive(let archive) = region.content { return archive == url }
        return false
    }

    /// A URL as shown in a problem: without any user info (`user:password@`).
    static func shown(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let at = rest[..<authorityEnd].lastIndex(of: "@") else { return url }
        return String(url[..<scheme.upperBound]) + String(rest[rest.index(after: at)...])
    }
}
