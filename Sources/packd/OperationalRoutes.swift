import Server

/// The routes an operator or orchestrator uses: liveness, readiness and the API description.
struct OperationalRoutes {
    let openAPI: OpenAPIDocument?
    let readiness: Readiness

    private static let ok = Array(#"{"status":"ok"}"#.utf8)
    private static let shuttingDown = Array(#"{"status":"shutting_down"}"#.utf8)

    func register(in router: inout Router) {
        router.get("/healthz") { _, responder in
            responder.respond(.json(bytes: Self.ok))
        }
        router.get("/readyz") { [readiness] _, responder in
            if readiness.isReady {
                responder.respond(.json(bytes: Self.ok))
            } else {
                responder.respond(.json(bytes: Self.shuttingDown, status: .serviceUnavailable))
            }
        }
        router.get("/openapi.yaml") { [openAPI] _, responder in
            guard let openAPI else {
                responder.respond(.problem(.notFound, "openapi.yaml was not found when the server started; pass --openapi PATH"))
                return
            }
            responder.respond(HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml"], body: openAPI.bytes))
        }
    }
}
