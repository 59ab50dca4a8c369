import Server

/// Registers API routes with the wrappers every route gets, outermost first: CORS (also on
/// rejections), metrics by route pattern, then the role check of openapi.yaml's
/// `x-required-role`. One place, so no route can forget one of them.
public struct APIRouteBuilder {
    public let authenticator: APIKeyAuthenticator
    public let cors: CORSPolicy
    public let metrics: PackdMetrics

    public init(authenticator: APIKeyAuthenticator, cors: CORSPolicy, metrics: PackdMetrics) {
        self.authenticator = authenticator
        self.cors = cors
        self.metrics = metrics
    }

    /// `role` nil: public. `allowsQueryToken` only for the event streams (`access_token`).
    public func add(_ method: HTTPMethod, _ pattern: String, role: APIRole?, allowsQueryToken: Bool = false,
                    options: RouteOptions = RouteOptions(), to router: inout Router, _ handler: @escaping APIHandler) {
        let guarded = authenticator.guarding(role, allowsQueryToken: allowsQueryToken, handler)
        cors.add(method, pattern, options: options, to: &router, metrics.instrument(pattern, guarded))
    }
}
