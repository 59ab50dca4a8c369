import Packs
import Logging
import Loop
import Server

/// `POST /v1/imports`: the body (a MapLibre offline database) is streamed to a scratch file with
/// the import size limit as the route's body limit (413 from the server, before or during the
/// upload), checked as untrusted on a pool thread, merged by the single writer with MapLibre's
/// newer-wins rules, and answered with the packs added or updated. The scratch file is removed
/// whatever happens.
final class ImportRoutes {
    private let context: SharingContext
    private var store: any PackStore { context.store }
    private var loop: EventLoop { context.loop }
    private var settings: SharingSettings { context.settings }
    private var slots: FileTransferSlots { context.slots }
    private var logger: Logger { context.logger }

    static let contentTypes: Set<String> = ["application/vnd.sqlite3", "application/x-sqlite3", "application/octet-stream"]

    init(_ context: SharingContext) {
        self.context = context
    }

    func register(in router: inout Router, using routes: APIRouteBuilder) {
        let limit = Int(clamping: settings.importLimits.maximumBytes)
        let options = RouteOptions(maxBodyBytes: limit, body: .streamed, handlerTimeout: settings.handlerTimeout)
        routes.add(.post, "/v1/imports", role: .write, options: options, to: &router) { [self] in receive($0, $1) }
    }

    private func receive(_ request: HTTPRequest, _ responder: APIResponder) {
        guard let body = request.bodyStream else {
            return responder.respondInternalError(ImportError.file("no body stream"), logger: logger, "receiving the import")
        }
        let mediaType = request.headers["Content-Type"]?.split(separator: ";").first?
            .trimmingCharacters(in: .whitespaces).lowercased()
        guard let mediaType, Self.contentTypes.contains(mediaType) else {
            return refuse(after: body, responder, Problem(.unsupportedMediaType,
                detail: "the body must be a MapLibre offline database sent as application/vnd.sqlite3 or application/octet-stream"))
        }
        guard slots.acquire() else {
            return refuse(after: body, responder, Problem(.unavailable, detail: "\(slots.limit) exports or imports are running; try again shortly"),
                          headers: ["Retry-After": "5"])
        }
        let upload = UploadFile(path: settings.scratchPath("import", "sqlite"), loop: loop, body: body)
        upload.receive { [self] result in
            switch result {
            case .failure(.body(let failure)):
                // The server has answered (413, 408, 400) or the client is gone.
                slots.release()
                logger.info("import upload ended early", metadata: ["reason": "\(failure)"])
            case .failure(.disk(let message)):
                slots.release()
                responder.respondInternalError(ImportError.file(message), logger: logger, "storing the upload")
            case .success(let path):
                process(path, responder) { [self] in
                    slots.release()
                    ScratchFile.remove(path, loop: loop)
                }
            }
        }
    }

    private func process(_ path: String, _ responder: APIResponder, done: @escaping () -> Void) {
        let settings = settings
        let store = store
        loop.runOnThreadPool({
            store.checkUpload(path: path, limits: settings.importLimits, scratchDirectory: settings.scratchDirectory)
                .flatMap { upload in Result { () throws(ImportError) in try ImportedRegions.check(upload); return upload } }
        }) { [self] checked in
            let upload: any CheckedUpload
            switch checked {
            case .failure(let error):
                done()
                return refuse(error, responder)
            case .success(let value): upload = value
            }
            store.write({ database in try database.importUpload(upload) }) { [self] merged in
                switch merged {
                case .failure(let error as ImportError):
                    done()
                    refuse(error, responder)
                case .failure(let error):
                    done()
                    responder.respondInternalError(error, logger: logger, "merging the import")
                case .success(let merged):
                    done()
                    logger.info("imported", metadata: [
                        "regions": "\(merged.packs.count)", "resources": "\(merged.resources)", "tiles": "\(merged.tiles)",
                    ])
                    store.read({ reader in try ImportJob.result(merged, reader: reader) }) { [self] body in
                        switch body {
                        case .failure(let error): responder.respondInternalError(error, logger: logger, "reading the imported packs")
                        case .success(let result):
                            responder.respond(.json(bytes: result.body))
                            context.packs.events.packsImported(result.changed)
                            context.packs.events.publishVersions(merged.createdVersions)
                        }
                    }
                }
            }
        }
    }

    /// Answers once the (discarded) body has been read: answered at once, a request with an
    /// unread body and `Connection: close` would hold its connection until the body timeout.
    /// The route's body limit bounds what is read.
    private func refuse(after body: RequestBodyStream, _ responder: APIResponder, _ problem: Problem, headers: HTTPHeaders = HTTPHeaders()) {
        body.onChunk = { _ in }
        body.onEnd = { responder.respond(problem, headers: headers) }
    }

    private func refuse(_ error: ImportError, _ responder: APIResponder) {
        guard let problem = ImportJob.problem(error) else {
            return responder.respondInternalError(error, logger: logger, "importing")
        }
        logger.info("import refused", metadata: ["error": "\(error)"])
        responder.respond(problem)
    }
}
