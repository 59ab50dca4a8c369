import Foundation
import Server

/// The dashboard, a page for people served by packd itself: `GET /` redirects to `dashboard/`,
/// which answers `index.html`; `/dashboard/{file}` the page's other files, `/dashboard/vendor/{file}`
/// MapLibre GL JS when installed, and `/dashboard/setup.json` whether it is (so the page never
/// asks for a file that is not there) and where offline resources live (`--public-url`). Public: the page holds no data and asks for an API key
/// itself. Every answer carries `DashboardHeaders`; files carry an `ETag` and answer `304`.
public struct DashboardRoutes {
    public let assets: DashboardAssets
    let headers: HTTPHeaders
    /// `--public-url`'s origin: offline styles point there, so the page sends its key there too.
    let publicOrigin: String?

    /// `publicURL`: the `--public-url` base, whose origin the page's maps fetch offline
    /// resources from (the offline `style.json` points there).
    public init(assets: DashboardAssets, publicURL: String? = nil) {
        self.assets = assets
        publicOrigin = publicURL.flatMap(DashboardHeaders.origin(of:))
        headers = DashboardHeaders.fields(publicOrigin: publicOrigin)
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        let headers = headers
        routes.add(.get, "/", role: nil, to: &router) { _, responder in
            responder.respond(Self.redirect(to: "dashboard/", headers: headers))
        }
        let pages = assets.pages
        // `/dashboard` and `/dashboard/` are one route; relative URLs in the page need the slash.
        routes.add(.get, "/dashboard", role: nil, to: &router) { request, responder in
            guard request.path.hasSuffix("/") else { return responder.respond(Self.redirect(to: "dashboard/", headers: headers)) }
            responder.respond(Self.answer(pages["index.html"], request, headers: headers))
        }
        let setup = JSONBody.encode([
            "map_library": assets.hasMapLibrary,
            "public_origin": publicOrigin.map { $0 as Any } ?? NSNull(),
        ] as [String: Any])
        let setupAsset = DashboardAssets.Asset(bytes: setup, contentType: "application/json", etag: DashboardAssets.etag(setup))
        routes.add(.get, "/dashboard/setup.json", role: nil, to: &router) { request, responder in
            responder.respond(Self.answer(Self.file(request) { _ in setupAsset }, request, headers: headers))
        }
        routes.add(.get, "/dashboard/{file}", role: nil, to: &router) { request, responder in
            responder.respond(Self.answer(Self.file(request) { pages[$0] }, request, headers: headers))
        }
        let library = assets.mapLibrary
        routes.add(.get, "/dashboard/vendor/{file}", role: nil, to: &router) { request, responder in
            responder.respond(Self.answer(Self.file(request) { library[$0] }, request, headers: headers))
        }
    }

    /// The asset a file route names; none for `name/` (the router ignores empty segments, but a
    /// file is no folder: relative URLs in it would resolve wrongly).
    private static func file(_ request: HTTPRequest, _ lookup: (String) -> DashboardAssets.Asset?) -> DashboardAssets.Asset? {
        guard !request.path.hasSuffix("/") else { return nil }
        return lookup(request.parameters["file"] ?? "setup.json")
    }

    /// 302, not a permanent redirect: the dashboard can be turned off, and browsers keep 301/308.
    private static func redirect(to location: String, headers: HTTPHeaders) -> HTTPResponse {
        var response = HTTPResponse(status: HTTPStatus(302, "Found"), headers: headers)
        response.headers.set("Location", location)
        return response
    }

    /// The asset (200, or 304 when `If-None-Match` names its tag), or 404. Always revalidated
    /// (`no-cache`): a new packd version's page is seen at once, and unchanged files cost a 304.
    static func answer(_ asset: DashboardAssets.Asset?, _ request: HTTPRequest, headers: HTTPHeaders) -> HTTPResponse {
        guard let asset else {
            var response = HTTPResponse.problem(Problem(.notFound, detail: "no dashboard file at \(request.path.prefix(200))"))
            for field in headers { response.headers.set(field.name, field.value) }
            return response
        }
        var fields = headers
        fields.set("ETag", asset.etag)
        fields.set("Cache-Control", "no-cache")
        if let tags = request.headers["If-None-Match"], ImmutableFileAnswer.matchesAny(tags, etag: asset.etag, weak: true) {
            return HTTPResponse(status: .notModified, headers: fields)
        }
        fields.set("Content-Type", asset.contentType)
        return HTTPResponse(status: .ok, headers: fields, body: asset.bytes)
    }
}
