import Logging
import Packs
import Server

/// Who answers `GET /v1/cluster`: the node table in cluster mode, the one process in SQLite mode.
/// Loop thread; `then` runs on the loop thread.
public protocol ClusterStatusSource: AnyObject {
    func clusterStatus(then: @escaping (Result<ClusterStatus, any Error>) -> Void)
}

/// `GET /v1/cluster` (read role): the live nodes and the work units of active packs.
public struct ClusterRoutes {
    public let source: any ClusterStatusSource
    let logger: Logger

    public init(source: any ClusterStatusSource, logger: Logger = Logger(label: "packd.api")) {
        self.source = source
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.get, "/v1/cluster", role: .read, to: &router) { [source, logger] _, responder in
            source.clusterStatus { result in
                switch result {
                case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the cluster's nodes")
                case .success(let status): responder.respond(.json(bytes: JSONBody.encode(status)))
                }
            }
        }
    }
}
