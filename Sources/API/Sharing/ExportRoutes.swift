import Foundation
import Packs
import Logging
import Loop
import Server

/// `GET /v1/packs/{id}/export?partial=true` of a pack that has no version yet (not complete):
/// builds the file on a pool thread into the scratch directory (never in memory, never on the
/// loop), then streams it with `Content-Length`, so a client sees its size and HEAD answers
/// without a body. The scratch file is removed once the answer ends, however it ends: sent,
/// failed, or the client gone mid-download or before the file was ready. A pack's versions are
/// answered from immutable artifacts instead (`ArtifactRoutes`).
final class ExportRoutes {
    private let context: SharingContext
    private var store: any PackStore { context.store }
    private var loop: EventLoop { context.loop }
    private var settings: SharingSettings { context.settings }
    private var slots: FileTransferSlots { context.slots }
    private var logger: Logger { context.logger }

    init(_ context: SharingContext) {
        self.context = context
    }

    func export(_ packID: Int64, _ query: ExportRequest, _ responder: APIResponder) {
        guard slots.acquire() else {
            return responder.respond(Problem(.unavailable, detail: "\(slots.limit) exports or imports are running; try again shortly"),
                                     headers: ["Retry-After": "5"])
        }
        let path = settings.scratchPath("export", query.format.fileExtension)
        let started = ContinuousClock.now
        store.read({ reader in try ExportJob.run(pack: packID, request: query, version: nil, to: path, reader: reader) }) { [self] result in
            slots.release()
            switch result {
            case .failure(let error):
                ScratchFile.remove(path, loop: loop)
                responder.respondInternalError(error, logger: logger, "exporting pack \(packID)")
            case .success(.refused(let problem)):
                ScratchFile.remove(path, loop: loop)
                responder.respond(problem)
            case .success(.written(let tiles)):
                logger.info("exported a pack", metadata: [
                    "pack_id": "\(packID)", "format": "\(query.format.rawValue)", "tiles": "\(tiles)",
                    "duration": "\(ContinuousClock.now - started)",
                ])
                let headers: HTTPHeaders = [
                    "Content-Type": query.format.contentType,
                    "Content-Disposition": "attachment; filename=\"pack-\(packID).\(query.format.fileExtension)\"",
                    "Cache-Control": "no-store",
                ]
                let loop = loop
                responder.respondWithFile(path: path, headers: headers) { _ in ScratchFile.remove(path, loop: loop) }
            }
        }
    }
}

/// Removal of scratch files off the loop (an unlink is disk work too).
enum ScratchFile {
    static func remove(_ path: String, loop: EventLoop) {
        loop.runOnThreadPool({ unlink(path) }, then: { _ in })
    }
}

extension APIResponder {
    /// `Responder.respondWithFile` with this responder's headers and observers. `completion`
    /// runs exactly once, also when the client is already gone.
    func respondWithFile(path: String, status: HTTPStatus = .ok, headers extra: HTTPHeaders, range: Range<Int>? = nil,
                         completion: @escaping (Bool) -> Void) {
        guard responder.isOpen else { return completion(false) }
        for observer in observers { observer(status) }
        var merged = extra
        for field in headers { merged.set(field.name, field.value) }
        responder.respondWithFile(path: path, status: status, headers: merged, range: range, completion: completion)
    }
}
