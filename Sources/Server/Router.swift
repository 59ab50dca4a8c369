/// Called on the loop thread with a request and the responder for it. The handler may answer at
/// once or keep the responder and answer later (still on the loop thread).
public typealias RequestHandler = (HTTPRequest, Responder) -> Void

/// How a route takes its request body.
public enum BodyHandling: Sendable, Equatable {
    /// The whole body is collected first; the handler runs when it is complete.
    case buffered
    /// The handler runs as soon as the head is parsed and reads the body through
    /// `request.bodyStream` chunk by chunk (uploads written to a file, never held in memory).
    case streamed
}

/// Per-route settings that differ from the server-wide limits.
public struct RouteOptions: Sendable {
    /// Overrides `ServerLimits.maxBodyBytes` for this route.
    public var maxBodyBytes: Int?
    public var body: BodyHandling
    /// Overrides `ServerLimits.handlerTimeout` for this route (a slow export may need longer).
    public var handlerTimeout: Duration?

    public init(maxBodyBytes: Int? = nil, body: BodyHandling = .buffered, handlerTimeout: Duration? = nil) {
        self.maxBodyBytes = maxBodyBytes
        self.body = body
        self.handlerTimeout = handlerTimeout
    }
}

/// Maps method and path to handlers. Patterns are literal segments and `{name}` parameters
/// (`/v1/packs/{id}/events`); a parameter matches exactly one non-empty segment.
public struct Router {
    struct Route {
        let method: HTTPMethod
        let segments: [Segment]
        let options: RouteOptions
        let handler: RequestHandler
    }

    enum Segment: Equatable {
        case literal(String)
        case parameter(String)
    }

    /// What a lookup found.
    enum Match {
        case found(Route, parameters: [String: String])
        case notFound
        case methodNotAllowed(allow: [HTTPMethod])
        /// A parameter segment that does not percent-decode.
        case badPath
    }

    private(set) var routes: [Route] = []
    /// Indexes into `routes` of routes without parameters, by their exact path.
    private var literalRoutes: [String: [Int]] = [:]

    public init() {}

    /// Registers `handler` for `method` and `pattern`. A GET route also answers HEAD.
    public mutating func add(_ method: HTTPMethod, _ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part -> Segment in
            if part.hasPrefix("{") && part.hasSuffix("}") && part.count > 2 {
                return .parameter(String(part.dropFirst().dropLast()))
            }
            return .literal(String(part))
        }
        routes.append(Route(method: method, segments: segments, options: options, handler: handler))
        if !segments.contains(where: { if case .parameter = $0 { true } else { false } }) {
            literalRoutes["/" + segments.map { if case .literal(let text) = $0 { text } else { "" } }.joined(separator: "/"), default: []]
                .append(routes.count - 1)
        }
    }

    public mutating func get(_ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        add(.get, pattern, options: options, handler)
    }

    public mutating func post(_ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        add(.post, pattern, options: options, handler)
    }

    public mutating func put(_ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        add(.put, pattern, options: options, handler)
    }

    public mutating func patch(_ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        add(.patch, pattern, options: options, handler)
    }

    public mutating func delete(_ pattern: String, options: RouteOptions = RouteOptions(), _ handler: @escaping RequestHandler) {
        add(.delete, pattern, options: options, handler)
    }

    func match(_ method: HTTPMethod, path: String) -> Match {
        // Parameterless routes (health checks, the hot path) are found without splitting the path.
        if let candidates = literalRoutes[path] {
            for index in candidates where routes[index].method == method || (method == .head && routes[index].method == .get) {
                return .found(routes[index], parameters: [:])
            }
        }
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        for route in routes where route.segments.count == parts.count && Self.matches(route.segments, parts) {
            if route.method == method || (method == .head && route.method == .get) {
                var parameters: [String: String] = [:]
                for (segment, part) in zip(route.segments, parts) {
                    guard case .parameter(let name) = segment else { continue }
                    guard let value = PercentDecoding.decode(Substring(part)) else { return .badPath }
                    parameters[name] = value
                }
                return .found(route, parameters: parameters)
            }
        }
        let allowed = methods(path: path)
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allow: allowed)
    }

    /// The methods routed for `path` in registration order, `HEAD` after `GET` (an `Allow` value).
    public func methods(path: String) -> [HTTPMethod] {
        let parts = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true)
        var allowed: [HTTPMethod] = []
        for route in routes where route.segments.count == parts.count && Self.matches(route.segments, parts) {
            if !allowed.contains(route.method) {
                allowed.append(route.method)
                if route.method == .get { allowed.append(.head) }
            }
        }
        return allowed
    }

    private static func matches(_ segments: [Segment], _ parts: [Substring.UTF8View]) -> Bool {
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, !literal.utf8.elementsEqual(part) { return false }
        }
        return true
    }
}
