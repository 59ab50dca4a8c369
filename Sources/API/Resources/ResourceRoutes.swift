import Foundation
import Logging
import Packs
import Plan
import Server
import TimeFormats

/// `/v1/resources?url=`: preloading a resource into the ambient cache (MapLibre's
/// `preloadData`) and reading what is stored for a URL.
///
/// The offline schema has no content-type column, so the type served is derived from the URL
/// (`ResourceMediaType`). With `fetch=true` (read-through, MapCache's disk cache) a miss or an
/// expired copy is fetched through the server's upstream client — the downloads' fetcher, with
/// its address policy and upstream rules — stored in the ambient cache with its caching headers,
/// then served; when the upstream fails, an expired copy is served rather than nothing. Stored
/// bodies are zlib (MapLibre's format), not gzip, so they are always sent decompressed.
public struct ResourceRoutes {
    public let store: any PackStore
    /// `fetch=true` needs the `write` role on a route that otherwise needs `read`.
    let authenticator: APIKeyAuthenticator
    let upstream: UpstreamAccess
    /// A read-through that stores what it fetched counts as a downloaded resource.
    let metrics: PackdMetrics?
    /// Freshness and stored times.
    let clock: WallClock
    let logger: Logger
    /// The largest preloaded or fetched body.
    public static let maximumBodyBytes = 16 << 20
    static let maximumURLLength = 4096
    static let fetchLimits = UpstreamLimits(maxBodyBytes: maximumBodyBytes, timeout: .seconds(30))

    init(store: any PackStore, authenticator: APIKeyAuthenticator, upstream: UpstreamAccess, metrics: PackdMetrics? = nil,
         clock: WallClock = .system, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.clock = clock
        self.authenticator = authenticator
        self.upstream = upstream
        self.metrics = metrics
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.get, "/v1/resources", role: .read, to: &router) { request, responder in get(request, responder) }
        routes.add(.put, "/v1/resources", role: .write, options: RouteOptions(maxBodyBytes: Self.maximumBodyBytes), to: &router) {
            request, responder in preload(request, responder)
        }
    }

    /// The `url` query parameter, checked as openapi.yaml says (http(s), a host, no user info).
    static func resourceURL(_ request: HTTPRequest) throws(Problem) -> String {
        guard let url = request.queryValue("url"), !url.isEmpty else {
            throw Problem(.malformedRequest, detail: "query parameter url is required")
        }
        guard url.utf8.count <= maximumURLLength else {
            throw Problem(.malformedRequest, detail: "query parameter url is longer than \(maximumURLLength) bytes")
        }
        // Scalars, not Characters: a combining mark after "//" would merge with the slash.
        let scalars = url.unicodeScalars
        let rest: Substring.UnicodeScalarView
        if Self.hasPrefix(scalars, "https://") { rest = scalars.dropFirst(8) } else if Self.hasPrefix(scalars, "http://") { rest = scalars.dropFirst(7) } else {
            throw Problem(.malformedRequest, detail: "query parameter url must be an http or https URL")
        }
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        guard !authority.isEmpty, !authority.contains("@"), !scalars.contains(where: { $0.value < 0x21 }) else {
            throw Problem(.malformedRequest, detail: "query parameter url needs a host and no user info or spaces")
        }
        return url
    }

    /// `prefix` (ASCII, lowercase) at the start of `scalars`, ignoring ASCII case.
    private static func hasPrefix(_ scalars: String.UnicodeScalarView, _ prefix: String) -> Bool {
        scalars.count >= prefix.unicodeScalars.count
            && zip(scalars, prefix.unicodeScalars).allSatisfy { scalar, expected in
                ((0x41...0x5A).contains(scalar.value) ? scalar.value + 0x20 : scalar.value) == expected.value
            }
    }

    private func get(_ request: HTTPRequest, _ responder: APIResponder) {
        let url: String
        do {
            url = try Self.resourceURL(request)
        } catch {
            return responder.respond(error)
        }
        let fetch: Bool
        switch request.queryValue("fetch") {
        case nil, "false": fetch = false
        case "true": fetch = true
        default: return responder.respond(Problem(.malformedRequest, detail: "query parameter fetch must be true or false"))
        }
        if fetch, case .failure(let problem) = authenticator.authenticate(request, requires: .write) {
            return responder.respond(APIKeyAuthenticator.response(for: problem))
        }
        // A URL libcurl would refuse is not fetched (and not looked up: nothing could be stored under it).
        if fetch, let refusal = CurlURLCheck.refusal(url) {
            return responder.respond(Problem(.validationFailed, detail: "query parameter url: \(refusal)",
                                             errors: [.init(parameter: "url", detail: refusal)]))
        }
        store.read({ reader -> (resource: StoredResource, body: [UInt8]?)? in
            guard let resource = try reader.resource(.resource(url: url, kind: ResourceMediaType.kind(of: url)), linkedTo: nil) else { return nil }
            return (resource, try resource.body?.decoded())
        }) { result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the resource")
            case .success(let found):
                if fetch, found.map({ !$0.resource.isFresh(now: clock.now) }) ?? true {
                    return readThrough(url, stale: found, request, responder)
                }
                guard let found else { return responder.respond(Problem(.notFound, detail: "nothing is stored for this url")) }
                serve(url, cache: found.resource.cache, body: found.body, request, responder)
            }
        }
    }

    /// Answers with a resource: 200 with its body, 204 for "no content", 304 when `If-None-Match`
    /// matches its ETag.
    private func serve(_ url: String, cache: HTTPCacheHeaders, body: [UInt8]?, _ request: HTTPRequest, _ responder: APIResponder) {
        var headers = HTTPHeaders()
        if let etag = cache.etag { headers.set("ETag", etag) }
        if let modified = cache.modified { headers.set("Last-Modified", HTTPDate.format(modified)) }
        if let expires = cache.expires { headers.set("Expires", HTTPDate.format(expires)) }
        if let tags = request.headers["If-None-Match"], let etag = cache.etag, ImmutableFileAnswer.matchesAny(tags, etag: etag, weak: true) {
            return responder.respond(HTTPResponse(status: .notModified, headers: headers))
        }
        guard let body else { return responder.respond(HTTPResponse(status: .noContent, headers: headers)) }
        headers.set("Content-Type", ResourceMediaType.contentType(of: url))
        responder.respond(HTTPResponse(status: .ok, headers: headers, body: body))
    }

    /// Fetches `url`, stores it in the ambient cache and serves it; `stale` (an expired copy) is
    /// served if the upstream fails.
    private func readThrough(_ url: String, stale: (resource: StoredResource, body: [UInt8]?)?, _ request: HTTPRequest,
                             _ responder: APIResponder) {
        guard let client = upstream.client else {
            return responder.respond(Problem(.unavailable, detail: "fetching from the upstream is not available on this server"))
        }
        let shown = EstimateJob.shown(url)
        client.get(url, limits: Self.fetchLimits) { result in
            let problem: (Problem, [String: Any])
            switch result {
            case .success(let response) where (200..<300).contains(response.status) && response.status != 204:
                return storeAndServe(url, response, request, responder)
            case .success(let response) where response.status == 404 || response.status == 410:
                problem = (Problem(.notFound, detail: "nothing is stored for this url and the upstream answered \(response.status)"),
                           ["upstream_status": response.status])
            case .success(let response):
                problem = (Problem(.upstreamFailed, detail: "the upstream answered \(response.status) for \(shown)"),
                           ["upstream_status": response.status, "url": shown])
            case .failure(let failure) where failure.hostNotAllowed:
                problem = (Problem(.hostNotAllowed, detail: "\(shown) is on an address this server may not reach",
                                   errors: [.init(parameter: "url", detail: "the host is not an allowed upstream host")]),
                           ["url": shown])
            case .failure(let failure):
                problem = (Problem(.upstreamFailed, detail: "fetching \(shown) failed: \(failure.code)"), ["url": shown])
            }
            if let stale, problem.0.status != 422 {
                logger.notice("serving an expired copy", metadata: ["reason": "\(problem.0.detail)"])
                return serve(url, cache: stale.resource.cache, body: stale.body, request, responder)
            }
            responder.respond(problem.0, extra: problem.1)
        }
    }

    /// Encodes the fetched body on the pool, stores it in the ambient cache (unless the cache is
    /// disabled and no pack holds the URL: then it is only served) and serves it.
    private func storeAndServe(_ url: String, _ response: UpstreamResponse, _ request: HTTPRequest, _ responder: APIResponder) {
        let body = response.body
        let cache = response.cache
        store.read({ _ -> (stored: StoredBody, plain: [UInt8]) in
            let stored = try StoredBody.encoding(body, inflateLimit: Self.maximumBodyBytes * 4)
            return (stored, try stored.decoded(limit: Self.maximumBodyBytes * 4))
        }) { result in
            switch result {
            case .failure:
                responder.respond(Problem(.upstreamFailed, detail: "the upstream's gzip body for \(EstimateJob.shown(url)) is corrupt or too large"),
                                  extra: ["url": EstimateJob.shown(url)])
            case .success(let encoded):
                storeInAmbientCache(url, encoded.stored, cache: cache) { outcome in
                    switch outcome {
                    case .failure(let error): logger.warning("caching a fetched resource failed", metadata: ["error": "\(error)"])
                    case .success(true): metrics?.downloadedResources.increment()
                    case .success(false): break
                    }
                    serve(url, cache: cache, body: encoded.plain, request, responder)
                }
            }
        }
    }

    /// Writes one resource for the ambient cache; `then` gets false when the cache is disabled
    /// and no pack holds the URL (nothing is written then).
    private func storeInAmbientCache(_ url: String, _ stored: StoredBody, cache: HTTPCacheHeaders,
                                     then: @escaping (Result<Bool, any Error>) -> Void) {
        let key = ResourceKey.resource(url: url, kind: ResourceMediaType.kind(of: url))
        let clock = clock
        store.write({ database -> Bool in
            try database.storeInAmbientCache(ResourceWrite(key: key, content: .body(stored), cache: cache), now: clock.now)
        }, then: then)
    }

    private func preload(_ request: HTTPRequest, _ responder: APIResponder) {
        let url: String
        let cache: HTTPCacheHeaders
        do {
            url = try Self.resourceURL(request)
            cache = try Self.cacheHeaders(request)
        } catch {
            if let errors = error.errors {
                return responder.respond(Problem(.validationFailed, detail: error.detail),
                                         extra: ["errors": errors.map { ["parameter": $0.pointer, "detail": $0.detail] }])
            }
            return responder.respond(error)
        }
        let body = request.body
        let key = ResourceKey.resource(url: url, kind: ResourceMediaType.kind(of: url))
        // Compression happens on the pool, never on the loop or the writer.
        store.read({ reader -> (StoredBody, existed: Bool) in
            (try StoredBody.encoding(body), try reader.resource(key, linkedTo: nil) != nil)
        }) { result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "encoding the resource")
            case .success(let (stored, existed)):
                storeInAmbientCache(url, stored, cache: cache) { result in
                    switch result {
                    case .failure(let error): responder.respondInternalError(error, logger: logger, "storing the resource")
                    case .success(false):
                        responder.respond(Problem(.conflict, detail: "the ambient cache is disabled and no pack holds this url"))
                    case .success(true): responder.respond(HTTPResponse(status: existed ? .noContent : .created))
                    }
                }
            }
        }
    }

    /// The caching headers of a preload; a present but invalid one is a 422 naming it (the
    /// problem's `errors[].pointer` carries the header name until `parameter` is rendered).
    static func cacheHeaders(_ request: HTTPRequest) throws(Problem) -> HTTPCacheHeaders {
        var cache = HTTPCacheHeaders()
        var errors: [Problem.FieldError] = []
        for (name, limit) in [("Last-Modified", 64), ("Expires", 64)] {
            guard let value = request.headers[name] else { continue }
            if value.utf8.count <= limit, let seconds = HTTPDate.parse(value) {
                if name == "Expires" { cache.expires = seconds } else { cache.modified = seconds }
            } else {
                errors.append(.init(pointer: name, detail: "must be an HTTP date"))
            }
        }
        if let etag = request.headers["ETag"] {
            if (1...256).contains(etag.utf8.count) { cache.etag = etag } else { errors.append(.init(pointer: "ETag", detail: "must be 1 to 256 bytes")) }
        }
        if let control = request.headers["Cache-Control"] {
            if control.utf8.count <= 256 {
                cache.mustRevalidate = control.lowercased().split(separator: ",").contains { $0.trimmingCharacters(in: .whitespaces) == "must-revalidate" }
            } else {
                errors.append(.init(pointer: "Cache-Control", detail: "must be at most 256 bytes"))
            }
        }
        guard errors.isEmpty else { throw Problem(.validationFailed, detail: "a caching header is not valid", errors: errors) }
        return cache
    }
}

/// The offline schema stores no media type, so both the row's `kind` and the served
/// `Content-Type` are derived from the URL's path, as MapLibre's resource kinds suggest.
enum ResourceMediaType {
    static func kind(of url: String) -> ResourceKind {
        let path = url.lowercased().prefix { $0 != "?" && $0 != "#" }
        if path.hasSuffix(".pbf") { return .glyphs }
        if path.contains("sprite") { return path.hasSuffix(".json") ? .spriteJSON : .spriteImage }
        if path.hasSuffix(".json") { return .style }
        return .image
    }

    static func contentType(of url: String) -> String {
        switch kind(of: url) {
        case .glyphs: "application/x-protobuf"
        case .style, .source, .spriteJSON: "application/json"
        case .spriteImage: "image/png"
        case .tile, .image: "application/octet-stream"
        }
    }
}
