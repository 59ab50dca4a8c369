import Server

/// Cross-origin access for browser dashboards: which origins may call the API, the preflight
/// answer, and the fields a cross-origin response carries (`ETag`, `Location` and `Last-Event-ID`
/// exposed, as api.md requires, and `X-Request-Id` so a page can quote it).
///
/// Keys travel in `Authorization` (or `access_token`), never in cookies, so credentials mode is
/// not offered and `*` is safe to configure. A request without `Origin`, or from an origin not
/// allowed, gets no CORS fields at all: the browser then refuses to hand the answer to the page.
public struct CORSPolicy: Sendable {
    public enum AllowedOrigins: Sendable, Equatable {
        case none
        case any
        /// Exact `scheme://host[:port]` origins, compared case-insensitively.
        case list([String])
    }

    public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    public let allowedOrigins: AllowedOrigins
    public var allowedMethods: [HTTPMethod] = [.get, .head, .post, .put, .patch, .delete]
    public var allowedHeaders: [String] = ["Authorization", "Content-Type", "Idempotency-Key", "If-None-Match", "Last-Event-ID", "Accept-Encoding", "X-Request-Id"]
    public var exposedHeaders: [String] = ["ETag", "Location", "Last-Event-ID", "X-Request-Id"]
    /// Seconds a browser may cache a preflight answer.
    public var maxAge = 600

    public init(allowedOrigins: AllowedOrigins) {
        switch allowedOrigins {
        case .list(let origins): self.allowedOrigins = .list(origins.map { $0.lowercased() })
        default: self.allowedOrigins = allowedOrigins
        }
    }

    /// No cross-origin access (the default configuration).
    public static let disabled = CORSPolicy(allowedOrigins: .none)

    /// Parses the configuration value: empty for none, `*`, or a comma-separated origin list.
    public init(parsing text: String) throws(ConfigurationError) {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        if trimmed.isEmpty { self.init(allowedOrigins: .none); return }
        if trimmed == "*" { self.init(allowedOrigins: .any); return }
        var origins: [String] = []
        for part in trimmed.split(separator: ",") {
            let origin = part.trimmingCharacters(in: .whitespaces)
            guard Self.isOrigin(origin) else {
                throw ConfigurationError(description: "'\(origin.prefix(100))' is not an origin (http[s]://host[:port])")
            }
            origins.append(origin)
        }
        self.init(allowedOrigins: .list(origins))
    }

    /// The `Access-Control-Allow-Origin` value for `origin`, or nil when it is not allowed.
    func allowedOriginValue(_ origin: String?) -> String? {
        guard let origin, !origin.isEmpty else { return nil }
        switch allowedOrigins {
        case .none: return nil
        case .any: return "*"
        case .list(let origins): return origins.contains(origin.lowercased()) ? origin : nil
        }
    }

    /// The fields an actual (non-preflight) response to `request` carries.
    public func responseHeaders(for request: HTTPRequest) -> HTTPHeaders {
        var headers = HTTPHeaders()
        if case .list = allowedOrigins { headers.add("Vary", "Origin") }
        guard let allowed = allowedOriginValue(request.headers["Origin"]) else { return headers }
        headers.add("Access-Control-Allow-Origin", allowed)
        headers.add("Access-Control-Expose-Headers", exposedHeaders.joined(separator: ", "))
        if !headers.contains("Vary") { headers.add("Vary", "Origin") }
        return headers
    }

    /// The answer to an `OPTIONS` request: 204 with `Allow` (the methods of the target resource,
    /// as the server routes them), and the allow fields when it is a preflight from an allowed
    /// origin asking for an allowed method.
    public func preflightResponse(for request: HTTPRequest) -> HTTPResponse {
        var headers: HTTPHeaders = ["Vary": "Origin, Access-Control-Request-Method, Access-Control-Request-Headers"]
        let resource = request.allowedMethods.isEmpty ? allowedMethods + [.options] : request.allowedMethods
        headers.add("Allow", resource.map(\.rawValue).joined(separator: ", "))
        if let allowed = allowedOriginValue(request.headers["Origin"]),
           let method = request.headers["Access-Control-Request-Method"],
           allowedMethods.contains(HTTPMethod(rawValue: method.trimmingCharacters(in: .whitespaces))) {
            headers.add("Access-Control-Allow-Origin", allowed)
            headers.add("Access-Control-Allow-Methods", allowedMethods.map(\.rawValue).joined(separator: ", "))
            headers.add("Access-Control-Allow-Headers", allowedHeaders.joined(separator: ", "))
            headers.add("Access-Control-Max-Age", String(maxAge))
        }
        return HTTPResponse(status: .noContent, headers: headers)
    }

    /// Wraps an API handler so every answer it (or a wrapper inside it) gives carries the CORS
    /// fields for its request.
    public func wrap(_ handler: @escaping APIHandler) -> RequestHandler {
        { request, responder in
            handler(request, APIResponder(responder, headers: responseHeaders(for: request)))
        }
    }

    /// Registers `handler` for `method` and `pattern`, and the pattern's `OPTIONS` preflight.
    public func add(_ method: HTTPMethod, _ pattern: String, options: RouteOptions = RouteOptions(), to router: inout Router, _ handler: @escaping APIHandler) {
        router.add(method, pattern, options: options, wrap(handler))
        router.add(.options, pattern) { request, responder in
            responder.respond(preflightResponse(for: request))
        }
    }

    private static func isOrigin(_ text: String) -> Bool {
        let lower = text.lowercased()
        guard let range = lower.range(of: "://") else { return false }
        let scheme = lower[..<range.lowerBound]
        let authority = lower[range.upperBound...]
        guard scheme == "http" || scheme == "https", !authority.isEmpty else { return false }
        return authority.allSatisfy { ($0.isASCII && $0.isLetter) || $0.isNumber || "-.:[]".contains($0) } && text.count <= 512
    }
}
