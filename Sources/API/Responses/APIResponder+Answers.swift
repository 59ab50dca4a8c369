import Foundation
import Logging
import Packs
import Server

extension APIResponder {
    public func respond(_ problem: Problem, headers: HTTPHeaders = HTTPHeaders()) {
        respond(.problem(problem, headers: headers))
    }

    /// A problem with members beyond RFC 9457's (`tile_count`, `tile_limit`).
    func respond(_ problem: Problem, extra: [String: Any]) {
        guard var object = (try? JSONSerialization.jsonObject(with: JSONEncoder().encode(problem))) as? [String: Any] else {
            return respond(problem)
        }
        object.merge(extra) { $1 }
        respond(HTTPResponse(status: HTTPStatus(problem.status, problem.title), headers: ["Content-Type": Problem.contentType],
                             body: JSONBody.encode(object)))
    }

    /// A store failure: logged with its detail, answered as a bare 500 (no internals leak) — or,
    /// when the database's disk is full, as 503 saying so: the server is up, the write can be
    /// retried once space is freed.
    func respondInternalError(_ error: any Error, logger: Logger, _ what: String) {
        logger.error("a store operation failed", metadata: ["operation": "\(what)", "error": "\(error)"])
        if (error as? StoreError)?.isStorageFull == true {
            return respond(Problem(.unavailable, detail: "\(what) failed: the database's disk is full; free space, then retry"))
        }
        respond(Problem(.internalError, detail: "\(what) failed; the server log has the details"))
    }
}
