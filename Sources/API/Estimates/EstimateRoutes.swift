import Loop
import Packs
import Logging
import Plan
import Server

/// `POST /v1/estimates`: what a region would download, before creating a pack. A tiles region is
/// counted at once; a style region's documents are fetched first (`EstimateJob`). Nothing is
/// stored. Loop thread only.
struct EstimateRoutes {
    let store: any PackStore
    let loop: EventLoop
    let upstream: UpstreamAccess
    let logger: Logger

    func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.post, "/v1/estimates", role: .read, to: &router) { request, responder in estimate(request, responder) }
    }

    private func estimate(_ request: HTTPRequest, _ responder: APIResponder) {
        let region: RegionDefinition
        do {
            region = try Self.region(body: request.body, contentType: request.headers["Content-Type"])
        } catch {
            return responder.respond(error)
        }
        let client: (any UpstreamClient)?
        if region.needsDocuments {
            guard let configured = upstream.client else {
                return responder.respond(Problem(.unavailable, detail: "estimating a style region needs upstream access, which this server does not have"))
            }
            client = configured
        } else {
            client = nil
        }
        EstimateJob(region: region, store: store, loop: loop, client: client, responder: responder, logger: logger).start()
    }

    /// `{"region": {...}}`, validated as `POST /v1/packs` validates its region (422 with pointers).
    static func region(body: [UInt8], contentType: String?) throws(Problem) -> RegionDefinition {
        let decoder = StrictJSONDecoder()
        try decoder.checkContentType(contentType)
        let object = try JSONBody.object(body, maxDepth: decoder.maxDepth)
        var errors: [Problem.FieldError] = object.keys.sorted().filter { $0 != "region" }.map {
            .init(pointer: "/" + JSONBody.escape($0), detail: "unknown field")
        }
        let region = PackCreateRequest.region(in: object, errors: &errors)
        guard errors.isEmpty, let region else {
            throw Problem(.validationFailed, detail: "the region cannot be estimated as given", errors: errors)
        }
        return region
    }
}
