import Foundation
import Logging
import Packs
import Server
import Store

/// `POST /v1/packs/{id}/invalidate` and `POST /v1/packs/{id}/check-update`: keeping a downloaded
/// pack current. Invalidate only changes state (the scheduler revalidates, told through the pack
/// routes' `onPackQueued`); check-update asks the upstream through `checkUpdate`, which the
/// server wires to Jobs (the API does not fetch). Loop thread only.
public final class PackMaintenanceRoutes {
    /// What probing a pack's upstream found (`checkUpdate`'s answer).
    public enum UpdateCheck: Sendable, Equatable {
        case checked(updateAvailable: Bool)
        /// The pack stored nothing to compare with yet.
        case nothingToCompare
        /// `url` (credentials removed) could not be probed; `status` when the upstream answered.
        case upstreamFailed(url: String, status: Int?, detail: String)
        /// The store could not be read; logged, answered as a bare 500.
        case storageFailed(String)
    }

    /// Probes the pack's upstream; calls back on the loop thread. nil: the server cannot fetch
    /// (answered 503).
    public var checkUpdate: ((Int64, @escaping (UpdateCheck) -> Void) -> Void)?

    let store: StoreAccess
    let packs: PackRoutes
    let logger: Logger

    public init(store: StoreAccess, packs: PackRoutes, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.packs = packs
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.post, "/v1/packs/{id}/invalidate", role: .write, to: &router) { [unowned self] in invalidate($0, $1) }
        routes.add(.post, "/v1/packs/{id}/check-update", role: .write, to: &router) { [unowned self] in probe($0, $1) }
    }

    private func invalidate(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = PackRoutes.packID(request, responder) else { return }
        store.write({ database in try database.beginInvalidation(packID, now: PackRoutes.now()) }) { [self] result in
            switch result {
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "starting the revalidation")
            case .success(.noSuchPack):
                responder.respond(PackRoutes.notFound(packID))
            case .success(.refused(let state)):
                responder.respond(Problem(.conflict, detail:
                    "the pack is \(state); only a complete pack can be revalidated (resume it, or wait until it is complete)"))
            case .success(.started):
                packs.publishState(packID, state: .queued, previous: .complete)
                respondWithPack(packID, status: .accepted, responder)
                packs.onPackQueued?(packID)
            }
        }
    }

    private func probe(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let packID = PackRoutes.packID(request, responder) else { return }
        guard let checkUpdate else {
            return responder.respond(Problem(.unavailable, detail: "this server cannot reach upstreams"))
        }
        store.read({ reader in try reader.pack(packID) != nil }) { [self] result in
            switch result {
            case .failure(let error): return responder.respondInternalError(error, logger: logger, "reading the pack")
            case .success(false): return responder.respond(PackRoutes.notFound(packID))
            case .success(true): break
            }
            checkUpdate(packID) { [self] outcome in
                switch outcome {
                case .checked(let available):
                    store.write({ database in try database.setUpdateAvailable(packID, available, now: PackRoutes.now()) }) { [self] result in
                        if case .failure(let error) = result {
                            return responder.respondInternalError(error, logger: logger, "storing the update check")
                        }
                        respondWithPack(packID, status: .ok, responder)
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

    private func respondWithPack(_ packID: Int64, status: HTTPStatus, _ responder: APIResponder) {
        store.read({ reader in try PackRoutes.document(packID, reader) }) { [self] result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the pack")
            case .success(nil): responder.respond(PackRoutes.notFound(packID))
            case .success(let document?):
                responder.respond(HTTPResponse(status: status, headers: ["Content-Type": "application/json", "ETag": document.etag],
                                               body: document.body))
            }
        }
    }

    /// A `progress` event with the revalidation's committed counts (openapi's `ProgressEvent.invalidation`).
    public func publishInvalidation(_ packID: Int64, _ invalidation: PackInvalidation, progress: StoredProgress,
                                    expected: ExpectedCounts) {
        packs.events.publish(.progress(ProgressEvent(
            packID: packID, state: .active, progress: PackDocument.progress(progress, expected: expected),
            invalidation: InvalidationResult(invalidation))))
    }

    private struct StoreFailure: Error, CustomStringConvertible {
        let message: String
        var description: String { message }
    }
}
