import Foundation
import Packs
import Logging
import Server

/// `/v1/storage…`: the database's figures, the ambient cache's size limit, clearing and
/// invalidating it, the overall tile limit, and the full reset (admin only, with confirmation).
public struct StorageRoutes {
    public let store: any PackStore
    public let packs: PackRoutes
    let logger: Logger

    public init(store: any PackStore, packs: PackRoutes, logger: Logger = Logger(label: "packd.api")) {
        self.store = store
        self.packs = packs
        self.logger = logger
    }

    public func register(in router: inout Router, using routes: APIRouteBuilder) {
        routes.add(.get, "/v1/storage", role: .read, to: &router) { _, responder in respondWithFigures(responder) }
        routes.add(.put, "/v1/storage/ambient-cache", role: .admin, to: &router) { request, responder in
            let update: AmbientCacheUpdate
            do throws(Problem) {
                update = try StrictJSONDecoder().decode(AmbientCacheUpdate.self, from: request)
                guard update.maximumSize >= 0 else {
                    throw Problem(.validationFailed, detail: "the ambient cache size cannot be negative",
                                  errors: [.init(pointer: "/maximum_size", detail: "must be 0 or more")])
                }
            } catch {
                return responder.respond(error)
            }
            change(responder, "setting the ambient cache size") { try $0.setMaximumAmbientCacheSize(update.maximumSize) }
        }
        routes.add(.delete, "/v1/storage/ambient-cache", role: .admin, to: &router) { _, responder in
            change(responder, "clearing the ambient cache", answer: .noContent) { try $0.clearAmbientCache() }
        }
        routes.add(.post, "/v1/storage/ambient-cache/invalidate", role: .admin, to: &router) { _, responder in
            change(responder, "invalidating the ambient cache", answer: .noContent) { try $0.invalidateAmbientCache() }
        }
        routes.add(.put, "/v1/storage/tile-limit", role: .admin, to: &router) { request, responder in
            let update: TileLimitUpdate
            do throws(Problem) {
                update = try StrictJSONDecoder().decode(TileLimitUpdate.self, from: request)
                if let maximum = update.maximum, maximum < 0 {
                    throw Problem(.validationFailed, detail: "the tile limit cannot be negative",
                                  errors: [.init(pointer: "/maximum", detail: "must be 0 or more, or null")])
                }
            } catch {
                return responder.respond(error)
            }
            change(responder, "setting the tile limit") { try $0.setTileLimit(update.maximum) }
        }
        routes.add(.post, "/v1/storage/reset", role: .admin, to: &router) { request, responder in
            do throws(Problem) {
                let body = try StrictJSONDecoder().decode(ResetRequest.self, from: request)
                guard body.confirm == "reset" else {
                    throw Problem(.validationFailed, detail: "a reset must be confirmed",
                                  errors: [.init(pointer: "/confirm", detail: "must be \"reset\"")])
                }
            } catch {
                return responder.respond(error)
            }
            reset(responder)
        }
    }

    /// Runs `operation` on the writer, then answers `answer` (204) or the figures after it.
    private func change(_ responder: APIResponder, _ what: String, answer: HTTPStatus = .ok,
                        _ operation: @escaping @Sendable (any StoreWriting) throws -> Void) {
        store.write(operation) { result in
            if case .failure(let error) = result { return responder.respondInternalError(error, logger: logger, what) }
            if answer == .noContent { return responder.respond(HTTPResponse(status: .noContent)) }
            respondWithFigures(responder)
        }
    }

    /// The writer's cheap in-memory figures, then the reader's counts.
    private func respondWithFigures(_ responder: APIResponder) {
        store.write({ database in
            let ambient = try database.ambientCache()
            return (ambient: ambient.size, maximum: ambient.maximumSize, tileLimit: try database.tileLimit())
        }) { result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "reading storage figures")
            case .success(let cheap):
                let reserved = store.reservedStorageBytes
                store.read({ reader in
                    JSONBody.encode([
                        "bytes": try reader.storedBytes(),
                        "reserve_bytes": reserved,
                        "packs": try reader.packCount(),
                        "ambient_cache": ["size": max(0, cheap.ambient), "maximum_size": cheap.maximum],
                        "tile_limit": ["count": try reader.linkedTileCount(), "maximum": cheap.tileLimit.map { $0 as Any } ?? NSNull()] as [String: Any],
                    ] as [String: Any])
                }) { result in
                    switch result {
                    case .failure(let error): responder.respondInternalError(error, logger: logger, "reading storage figures")
                    case .success(let body): responder.respond(.json(bytes: body))
                    }
                }
            }
        }
    }

    /// Every pack gets `pack_removed` after the reset commits; ids are listed first (a pack
    /// created in between is removed too, without an event: the reset wins).
    private func reset(_ responder: APIResponder) {
        store.read({ reader in
            var ids: [Int64] = []
            var after: Int64 = 0
            while true {
                let page = try reader.packs(after: after, state: nil, nameContains: nil, limit: 500)
                ids += page.map(\.id)
                guard let last = page.last, page.count == 500 else { return ids }
                after = last.id
            }
        }) { result in
            switch result {
            case .failure(let error): responder.respondInternalError(error, logger: logger, "listing packs")
            case .success(let ids):
                for id in ids { packs.scheduling?.packSuspended(id) }
                store.write({ try $0.reset() }) { result in
                    if case .failure(let error) = result { return responder.respondInternalError(error, logger: logger, "resetting") }
                    responder.respond(HTTPResponse(status: .noContent))
                    for id in ids { packs.packRemoved(id) }
                }
            }
        }
    }
}

private struct AmbientCacheUpdate: Codable {
    var maximumSize: Int64
    enum CodingKeys: String, CodingKey { case maximumSize = "maximum_size" }
}

/// `{"maximum": n | null}`: the field is required even when null, which synthesised Codable
/// cannot express (it treats a missing optional as nil).
private struct TileLimitUpdate: Codable {
    var maximum: Int64?
    enum CodingKeys: String, CodingKey { case maximum }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.contains(.maximum) else {
            throw DecodingError.keyNotFound(CodingKeys.maximum, .init(codingPath: [], debugDescription: "required"))
        }
        maximum = try container.decodeNil(forKey: .maximum) ? nil : container.decode(Int64.self, forKey: .maximum)
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        if let maximum { try container.encode(maximum, forKey: .maximum) } else { try container.encodeNil(forKey: .maximum) }
    }
}

private struct ResetRequest: Codable {
    var confirm: String
}
