/// `GET /healthz` (liveness) and `GET /readyz` (readiness) with the JSON bodies openapi.yaml
/// documents. They live in the server because readiness is the server's own state: from the
/// moment graceful shutdown begins, a request still being answered learns it via its responder.
public struct HealthRoutes {
    /// False while the process cannot do work yet (database not open): `/readyz` answers 503
    /// `starting`. Called on the loop thread.
    let isStarted: () -> Bool

    static let ok = Array(#"{"status":"ok"}"#.utf8)
    static let ready = Array(#"{"status":"ready"}"#.utf8)
    static let starting = Array(#"{"status":"starting"}"#.utf8)
    static let shuttingDown = Array(#"{"status":"shutting_down"}"#.utf8)

    public init(isStarted: @escaping () -> Bool = { true }) {
        self.isStarted = isStarted
    }

    public func register(in router: inout Router) {
        router.get("/healthz") { _, responder in
            responder.respond(.json(bytes: Self.ok))
        }
        router.get("/readyz") { [isStarted] _, responder in
            // Never cached: an orchestrator polling through a proxy must see the flip at once.
            let headers: HTTPHeaders = ["Cache-Control": "no-store"]
            if responder.serverIsShuttingDown {
                responder.respond(.json(bytes: Self.shuttingDown, status: .serviceUnavailable, headers: headers))
            } else if !isStarted() {
                responder.respond(.json(bytes: Self.starting, status: .serviceUnavailable, headers: headers))
            } else {
                responder.respond(.json(bytes: Self.ready, headers: headers))
            }
        }
    }
}
