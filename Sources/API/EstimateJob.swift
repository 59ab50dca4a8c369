import Foundation
import Logging
import Packs
import Plan
import Server
import Store

/// One `POST /v1/estimates` of a style region, on the loop thread: fetches the style, then its
/// TileJSONs all at once, through the server's upstream client; parses each document on the
/// thread pool (a style can be megabytes of JSON); then counts on the pool. Answers exactly once:
/// the first upstream failure ends the job and later answers are ignored.
final class EstimateJob {
    /// The style: at most the planner's document size, and a deadline per request.
    static let documentLimits = UpstreamLimits(maxBodyBytes: PlanLimits().maxDocumentBytes, timeout: .seconds(15))
    /// A TileJSON is a few kilobytes; a style may name a thousand of them, so each is held to less.
    static let tileJSONLimits = UpstreamLimits(maxBodyBytes: 4 << 20, timeout: .seconds(15))
    /// TileJSONs fetched at once, so one estimate holds at most this many bodies in flight and
    /// leaves the fetcher's slots to downloads.
    static let tileJSONConcurrency = 8
    /// All documents of one estimate together.
    static let maximumTotalBytes = 64 << 20

    private let store: StoreAccess
    /// Nil for a tiles region, which needs no document.
    private let client: (any UpstreamClient)?
    private let responder: APIResponder
    private let logger: Logger
    private var builder: PlanBuilder
    private var tileJSONs: [(url: String, body: [UInt8])] = []
    private var pendingTileJSONs: [String] = []
    private var outstanding = 0
    private var receivedBytes = 0
    private var answered = false

    init(region: RegionDefinition, store: StoreAccess, client: (any UpstreamClient)?, responder: APIResponder, logger: Logger) {
        self.store = store
        self.client = client
        self.responder = responder
        self.logger = logger
        builder = PlanBuilder(region: region)
    }

    /// Starts with the style; the job keeps itself alive through its callbacks until it answers.
    func start() {
        guard let styleURL = builder.region.styleURL else { return count() }
        fetch(styleURL, limits: Self.documentLimits, pointer: "/region/style_url") { [self] body in
            let current = builder
            store.loop.runOnThreadPool({ () -> Result<PlanBuilder, PlanError> in
                var builder = current
                return Result { () throws(PlanError) in
                    try builder.addStyle(Data(try Self.decoded(body, url: styleURL)))
                    return builder
                }
            }, then: { [self] result in
                switch result {
                case .failure(let error): fail(error)
                case .success(let parsed):
                    builder = parsed
                    fetchTileJSONs()
                }
            })
        }
    }

    private func fetchTileJSONs() {
        pendingTileJSONs = builder.missingTileJSONURLs.reversed()
        guard !pendingTileJSONs.isEmpty else { return count() }
        fetchNextTileJSONs()
    }

    private func fetchNextTileJSONs() {
        while outstanding < Self.tileJSONConcurrency, let url = pendingTileJSONs.popLast() {
            outstanding += 1
            fetch(url, limits: Self.tileJSONLimits, pointer: nil) { [self] body in
                tileJSONs.append((url, body))
                outstanding -= 1
                if outstanding == 0, pendingTileJSONs.isEmpty { count() } else { fetchNextTileJSONs() }
            }
        }
    }

    /// Adds the TileJSONs, counts and samples stored sizes, all on the pool.
    private func count() {
        guard !answered else { return }
        let builder = builder
        let tileJSONs = tileJSONs
        store.read({ reader -> Result<[UInt8], PlanError> in
            var builder = builder
            do throws(PlanError) {
                for document in tileJSONs {
                    try builder.addTileJSON(Data(try Self.decoded(document.body, url: document.url)), url: document.url)
                }
            } catch {
                return .failure(error)
            }
            let estimate = RegionEstimate(plan: builder.plan, region: builder.region, style: builder.style)
            return .success(JSONBody.encode(try estimate.document(reader)))
        }) { [self] result in
            switch result {
            case .failure(let error):
                answered = true
                responder.respondInternalError(error, logger: logger, "estimating the region")
            case .success(.failure(let error)): fail(error)
            case .success(.success(let body)):
                guard !answered else { return }
                answered = true
                responder.respond(.json(bytes: body))
            }
        }
    }

    /// GETs one document; `then` gets a 2xx body. Anything else answers the request.
    private func fetch(_ url: String, limits: UpstreamLimits, pointer: String?, then: @escaping ([UInt8]) -> Void) {
        guard let client else { return answer(Problem(.unavailable, detail: "no upstream access"), extra: [:]) }
        client.get(url, limits: limits) { [self] result in
            guard !answered else { return }
            switch result {
            case .success(let response) where (200..<300).contains(response.status) && response.status != 204:
                receivedBytes += response.body.count
                guard receivedBytes <= Self.maximumTotalBytes else {
                    return answer(Problem(.upstreamFailed, detail: "the style and its TileJSONs exceed \(Self.maximumTotalBytes) bytes together"),
                                  extra: ["url": Self.shown(url)])
                }
                then(response.body)
            case .success(let response):
                answer(Problem(.upstreamFailed, detail: "the upstream answered \(response.status) for \(Self.shown(url))"),
                       extra: ["upstream_status": response.status, "url": Self.shown(url)])
            case .failure(let failure) where failure.hostNotAllowed:
                let errors: [Problem.FieldError]? = pointer.map { [.init(pointer: $0, detail: "the host is not an allowed upstream host")] }
                answer(Problem(.hostNotAllowed, detail: "\(Self.shown(url)) is on an address this server may not reach", errors: errors),
                       extra: ["url": Self.shown(url)])
            case .failure(let failure):
                answer(Problem(.upstreamFailed, detail: "fetching \(Self.shown(url)) failed: \(failure.code)"),
                       extra: ["url": Self.shown(url)])
            }
        }
    }

    /// A document the upstream served that the planner refuses (not JSON, no tiles…).
    private func fail(_ error: PlanError) {
        answer(Problem(.upstreamFailed, detail: "the upstream's document cannot be used: \(error.description)"),
               extra: ["url": Self.shown(error.url ?? builder.region.styleURL ?? "")])
    }

    private func answer(_ problem: Problem, extra: [String: Any]) {
        guard !answered else { return }
        answered = true
        responder.respond(problem, extra: extra)
    }

    /// The body as JSON text: a gzip body (an upstream ignoring our `Accept-Encoding` or sending
    /// a pre-compressed file) is inflated, bounded by the document limit.
    static func decoded(_ body: [UInt8], url: String) throws(PlanError) -> [UInt8] {
        do {
            return try ZlibCodec.gunzippedIfGzip(body, limit: documentLimits.maxBodyBytes)
        } catch {
            throw PlanError(.documentTooLarge, "the gzip body is corrupt or inflates beyond \(documentLimits.maxBodyBytes) bytes", url: url)
        }
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
