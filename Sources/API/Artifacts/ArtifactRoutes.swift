import Artifacts
import Foundation
import Logging
import Loop
import Packs
import Server

/// The routes that answer with artifacts: `GET|HEAD /v1/packs/{id}/versions/{v}/export`
/// (immutable, cached for a year), `GET|HEAD /v1/packs/{id}/export` (the current version's
/// artifact, revalidated; or a scratch export of an unfinished pack with `partial=true`), and
/// `GET /v1/packs/{id}/updates?from=N` (what a device downloads next). Every route reads the
/// pack's versions first, so a version no longer kept is `410` even while its file lingers.
final class ArtifactRoutes {
    private let store: any PackStore
    private let cache: ArtifactCache
    private let scratchExports: ExportRoutes
    private let settings: SharingSettings
    private let logger: Logger
    /// The retained versions last seen per pack: when they change, older artifacts are removed.
    private var retainedSeen: [Int64: Set<Int64>] = [:]

    init(_ context: SharingContext, cache: ArtifactCache, scratchExports: ExportRoutes) {
        store = context.store
        settings = context.settings
        logger = context.logger
        self.cache = cache
        self.scratchExports = scratchExports
    }

    func register(in router: inout Router, using routes: APIRouteBuilder) {
        let options = RouteOptions(handlerTimeout: settings.handlerTimeout)
        routes.pack.add(.get, "/export", role: .read, options: options, to: &router) { [self] in exportCurrent($0.rawValue, $1, $2) }
        routes.pack.add(.get, "/versions/{version}/export", role: .read, options: options, to: &router) { [self] in
            exportVersion($0.rawValue, $1, $2)
        }
        routes.pack.add(.get, "/updates", role: .read, options: options, to: &router) { [self] in updates($0.rawValue, $1, $2) }
    }

    /// Called when a pack is deleted: its artifacts go with it.
    func packRemoved(_ packID: Int64) {
        retainedSeen[packID] = nil
        cache.removeVersions(pack: packID, except: [])
    }

    // MARK: routes

    private func exportCurrent(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        let query: ExportRequest
        do {
            query = try ExportRequest(request, route: .current)
        } catch {
            return responder.respond(error)
        }
        versions(of: packID, responder) { [self] versions in
            guard versions.current > 0 else {
                // No version yet: the scratch export answers (partial=true) or refuses (409).
                return scratchExports.export(packID, query, responder)
            }
            let key = ArtifactKey(pack: packID, version: versions.current, format: query.format, source: query.source)
            serve(key, request, responder, cacheControl: ArtifactResponse.revalidate,
                  fileName: "pack-\(packID).\(query.format.fileExtension)", contentLocation: Self.url(key))
        }
    }

    private func exportVersion(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        guard let version = request.parameters["version"].flatMap(ExportRequest.version), version >= 1 else {
            return responder.respond(Problem(.notFound, detail: "a pack version is a whole number from 1"))
        }
        let query: ExportRequest
        do {
            query = try ExportRequest(request, route: .versioned)
        } catch {
            return responder.respond(error)
        }
        versions(of: packID, responder) { [self] versions in
            switch versions.lookup(version) {
            case .unknown:
                return responder.respond(PackVersions.unknown(pack: packID, version: version, current: versions.current))
            case .gone:
                let (problem, extra) = PackVersions.gone(pack: packID, version: version, current: versions.current)
                return responder.respond(problem, extra: extra)
            case .current, .retained:
                break
            }
            if let since = query.since, since >= version {
                let detail = "since must be older than the version exported (\(version))"
                return responder.respond(ExportRequest.invalid("since", detail))
            }
            let key = ArtifactKey(pack: packID, version: version, format: query.format, source: query.source, since: query.since)
            let name = "pack-\(packID)-v\(version)" + (query.since.map { "-since-\($0)" } ?? "") + ".\(query.format.fileExtension)"
            serve(key, request, responder, cacheControl: ArtifactResponse.immutable, fileName: name, contentLocation: nil)
        }
    }

    private func updates(_ packID: Int64, _ request: HTTPRequest, _ responder: APIResponder) {
        let query: UpdateQuery
        do {
            query = try UpdateQuery(request)
        } catch {
            return responder.respond(error)
        }
        versions(of: packID, responder) { [self] versions in
            guard versions.current > 0 else {
                return responder.respond(Problem(.conflict, detail: "pack \(packID) has no version yet: it has not completed"))
            }
            let plan = UpdatePlan(from: query.from, versions: versions, format: query.format)
            switch plan {
            case .none:
                responder.respond(.json(bytes: JSONBody.encode(PackUpdate(from: query.from, to: versions.current, kind: .none))))
            case .full:
                let key = ArtifactKey(pack: packID, version: versions.current, format: query.format, source: query.source)
                artifact(key, responder) { full in
                    responder.respond(.json(bytes: JSONBody.encode(PackUpdate(from: query.from, to: versions.current, kind: .full,
                                                                              url: Self.url(key), size: full.size, sha256: full.sha256))))
                }
            case .deltaIfSmaller(let since):
                let fullKey = ArtifactKey(pack: packID, version: versions.current, format: query.format, source: query.source)
                let deltaKey = ArtifactKey(pack: packID, version: versions.current, format: query.format, since: since)
                artifact(fullKey, responder) { [self] full in
                    artifact(deltaKey, responder) { delta in
                        let chosen = delta.size < full.size ? (delta, PackUpdate.Kind.delta) : (full, PackUpdate.Kind.full)
                        responder.respond(.json(bytes: JSONBody.encode(PackUpdate(
                            from: query.from, to: versions.current, kind: chosen.1, url: Self.url(chosen.0.key),
                            size: chosen.0.size, sha256: chosen.0.sha256))))
                    }
                }
            }
        }
    }

    // MARK: steps

    /// The pack's versions (404 when it does not exist); removes artifacts of versions no
    /// longer retained when the set moved since this server last looked.
    private func versions(of packID: Int64, _ responder: APIResponder, then: @escaping (PackVersions) -> Void) {
        store.read({ reader in try reader.pack(packID).map { try PackVersions($0, reader: reader) } }) { [self] result in
            switch result {
            case .failure(let error):
                responder.respondInternalError(error, logger: logger, "reading pack \(packID)")
            case .success(nil):
                responder.respond(PackRouteGroup.notFound(packID))
            case .success(let versions?):
                if let seen = retainedSeen[packID], seen != versions.retained {
                    cache.removeVersions(pack: packID, except: versions.retained)
                }
                retainedSeen[packID] = versions.retained
                then(versions)
            }
        }
    }

    private func serve(_ key: ArtifactKey, _ request: HTTPRequest, _ responder: APIResponder, cacheControl: String, fileName: String,
                       contentLocation: String?) {
        artifact(key, responder) { [self] artifact in
            ArtifactResponse(artifact: artifact, cacheControl: cacheControl, fileName: fileName, contentLocation: contentLocation)
                .send(request, responder, cache: cache)
        }
    }

    /// The artifact of `key` (found or built once), or the answer saying why not.
    private func artifact(_ key: ArtifactKey, _ responder: APIResponder, then: @escaping (Artifact) -> Void) {
        cache.artifact(key, build: ArtifactBuild.using(store)) { [self] result in
            switch result {
            case .success(let artifact):
                then(artifact)
            case .failure(.build(let problem as Problem)) where problem.status == 503:
                // A refresh is changing the pack's rows: its next version comes when it ends.
                responder.respond(problem, headers: ["Retry-After": "30"])
            case .failure(.build(let problem as Problem)):
                responder.respond(problem)
            case .failure(.build(let error as ExportError)) where ExportJob.problem(error, pack: key.pack) != nil:
                responder.respond(ExportJob.problem(error, pack: key.pack)!)
            case .failure(.queueFull(let limit)):
                responder.respond(Problem(.unavailable, detail: "\(limit) other artifacts are waiting to be built; try again shortly"),
                                  headers: ["Retry-After": "5"])
            case .failure(let error):
                responder.respondInternalError(Self.storeError(error), logger: logger, "building the artifact of \(key)")
            }
        }
    }

    private static func storeError(_ error: ArtifactError) -> any Error {
        if case .build(let inner) = error { return inner }
        return error
    }

    /// The versioned URL of `key` (path and query).
    static func url(_ key: ArtifactKey) -> String {
        var url = "/v1/packs/\(key.pack)/versions/\(key.version)/export?format=\(key.format.rawValue)"
        if let source = key.source {
            url += "&source=" + (source.addingPercentEncoding(withAllowedCharacters: .urlQueryValueAllowed) ?? source)
        }
        if let since = key.since { url += "&since=\(since)" }
        return url
    }
}

extension CharacterSet {
    /// RFC 3986's unreserved characters: safe in a query value as they are.
    static let urlQueryValueAllowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
}
