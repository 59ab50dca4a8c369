import Logging
import Packs
import Server

/// `GET /v1/packs/{id}/versions`: the pack's current version and its retained versions, newest
/// first, with what each changed since the one before (a device polling for updates reads it;
/// the artifacts of each version are served under `/v1/packs/{id}/versions/{v}/…`).
public struct VersionRoutes {
    public let store: any PackStore
    let logger: Logger

    public init(store: any PackStore, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.pack.add(.get, "/versions", role: .read, to: &router) { packID, request, responder in
            guard request.queryItems.isEmpty else {
                let name = request.queryItems[0].name
                let detail = "unknown query parameter \(name); this list takes none"
                return responder.respond(Problem(.malformedRequest, detail: detail, errors: [.init(parameter: name, detail: detail)]))
            }
            let id = packID.rawValue
            store.read({ reader -> PackVersionList? in
                guard let pack = try reader.pack(id) else { return nil }
                return PackVersionList(packID: id, version: pack.version,
                                       versions: try reader.versions(of: id).map(PackVersionSummary.init))
            }) { result in
                switch result {
                case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack's versions")
                case .success(nil): responder.respond(PackRouteGroup.notFound(packID))
                case .success(let list?): responder.respond(.json(bytes: JSONBody.encode(list)))
                }
            }
        }
    }
}
