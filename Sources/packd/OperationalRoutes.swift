import Server

/// The routes an operator or orchestrator uses: liveness, readiness and the API description.
struct OperationalRoutes {
    let openAPI: OpenAPIDocument?

    func register(in router: inout Router) {
        HealthRoutes().register(in: &router)
        router.get("/openapi.yaml") { [openAPI] _, responder in
            guard let openAPI else {
                responder.respond(.problem(.notFound, "openapi.yaml was not found when the server started; pass --openapi PATH"))
                return
            }
            responder.respond(HTTPResponse(status: .ok, headers: ["Content-Type": "application/yaml"], body: openAPI.bytes))
        }
    }
}
