import Foundation
import Jobs
import Logging
import Packs
import Server

/// `POST /v1/packs/{id}/invalidate` and `POST /v1/packs/{id}/check-update`: keeping a downloaded
/// pack current. Invalidate only changes state (the scheduler revalidates, told through the pack
/// routes' `scheduling`); check-update probes the upstream with Jobs' `PackUpdateChecker`. Loop
/// thread only.
public final class PackMaintenanceRoutes {
    /// Probes a pack's upstream (`packd` sets it over the server's fetcher); nil: the server
    /// cannot fetch (answered 503).
    public var updateChecker: (any UpdateChecking)?

    let store: any PackStore
    let packs: PackRoutes
    let logger: Logger

    public init(store: any PackStore, packs: PackRoutes, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.packs = packs
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.pack.add(.post, "/invalidate", role: .write, to: &router) { [unowned self] in invalidate($0, $2) }
        routes.pack.add(.post, "/check-update", role: .write, to: &router) { [unowned self] in probe($0, $2) }
    }

    private func invalidate(_ packID: PackID, _ responder: APIResponder) {
        let clock = packs.clock
        let id = packID.rawValue
        store.write({ database in try database.transition(id, .invalidate, now: clock.now) }) { [self] result in
            switch result {
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "starting the revalidation")
            case .success(.noSuchPack):
                responder.respond(PackRouteGroup.notFound(packID))
            case .success(.refused(let refusal)):
                responder.respond(Problem(.conflict, detail: refusal.reason))
            case .success(.applied(let transition)):
                packs.events.publish(transition, packID: id)
                packs.reads.respond(packID, status: .accepted, ifNoneMatch: nil, responder)
                packs.perform(PackLifecycle.Transition(from: transition.from, to: transition.to,
                                                       actions: transition.loopActions.filter { $0 == .enqueue }), packID: id)
            }
        }
    }

    private func probe(_ packID: PackID, _ responder: APIResponder) {
        guard let updateChecker else {
            return responder.respond(Problem(.unavailable, detail: "this server cannot reach upstreams"))
        }
        let id = packID.rawValue
        store.read({ reader in try reader.pack(id) != nil }) { [self] result in
            switch result {
            case .failure(let error): return responder.respondInternalError(error, logger: logger, "reading the pack")
            case .success(false): return responder.respond(PackRouteGroup.notFound(packID))
            case .success(true): break
            }
            updateChecker.check(id) { [self] outcome in
                switch outcome {
                case .checked(let available):
                    let clock = packs.clock
                    store.write({ database in try database.setUpdateAvailable(id, available, now: clock.now) }) { [self] result in
                        if case .failure(let error) = result {
                            return responder.respondInternalError(error, logger: logger, "storing the update check")
                        }
                        packs.reads.respond(packID, ifNoneMatch: nil, responder)
                    }
                case .nothingToCompare:
                    responder.respond(Problem(.conflict, detail:
                        "the pack has stored no style, TileJSON, sprite or glyphs yet: there is nothing to compare"))
                case .upstreamFailed(let url, let status, let detail):
                    let problem = Problem(.upstreamFailed, detail: "checking \(url) failed: \(detail); the pack is unchanged")
                    if let status { responder.respond(problem, extra: ["upstream_status": status]) } else { responder.respond(problem) }
                case .storageFailed(let message):
                    responder.respondInternalError(StoreFailure(message: message), logger: logger, "reading the pack's resources")
                }
            }
        }
    }

    private struct StoreFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
