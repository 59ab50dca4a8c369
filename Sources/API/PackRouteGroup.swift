import Packs
import Server

/// The routes of one pack, `/v1/packs/{id}…`: the prefix written once, and `{id}` decoded once
/// into a `PackID` before a handler runs (after the route's role check, so a caller without
/// the role learns nothing of which ids exist). A segment that is no pack id is answered as an
/// unknown id is (openapi.yaml: `404`), its detail saying what is wrong with it.
public struct PackRouteGroup {
    /// The group's prefix; a route's own path follows it (`""` for the pack itself).
    public static let prefix = "/v1/packs/{id}"

    public typealias Handler = (PackID, HTTPRequest, APIResponder) -> Void

    let routes: APIRouteBuilder

    /// Registers `method` on `prefix + path` with the wrappers of `APIRouteBuilder.add`.
    public func add(_ method: HTTPMethod, _ path: String = "", role: APIRole?, allowsQueryToken: Bool = false,
                    options: RouteOptions = RouteOptions(), to router: inout Router, _ handler: @escaping Handler) {
        routes.add(method, Self.prefix + path, role: role, allowsQueryToken: allowsQueryToken, options: options, to: &router) {
            request, responder in
            guard let packID = PackID(pathSegment: request.parameters["id"] ?? "") else {
                return responder.respond(Self.notAPackID(request.parameters["id"] ?? ""))
            }
            handler(packID, request, responder)
        }
    }

    /// The `404` for a matched `{id}` that is not a pack id.
    static func notAPackID(_ segment: String) -> Problem {
        Problem(.notFound, detail: "no such pack: '\(segment.prefix(40))' is not a pack id (an integer from 1 to \(PackID.maximum))")
    }

    /// The problem for an id no pack has (or one the caller may not see).
    public static func notFound(_ packID: PackID) -> Problem {
        notFound(packID.rawValue)
    }

    /// The same for an id as the store protocols take it.
    public static func notFound(_ packID: Int64) -> Problem {
        Problem(.notFound, detail: "no pack has id \(packID)")
    }
}

extension APIRouteBuilder {
    /// The group of `/v1/packs/{id}…` routes.
    public var pack: PackRouteGroup { PackRouteGroup(routes: self) }
}
