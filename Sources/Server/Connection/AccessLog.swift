import CUV
import Logging

/// The access log: one line per answered request, with the message `access` and its documented
/// fields (`method`, `path`, `status`, `bytes`, `duration_ms`, `request_id`), so a JSON log
/// collector indexes them. Never the query, which may carry a key (`access_token`); a path cut to
/// `maximumLoggedPath` bytes.
struct AccessLog {
    static let maximumLoggedPath = 1024

    let logger: Logger

    /// Logs the response of `slot` once it is written (or given up).
    func record(_ slot: Responder, now: UInt64 = uv_hrtime()) {
        logger.info("access", metadata: [
            "method": .string(slot.method.rawValue),
            "path": .string(Self.loggedPath(slot.path)),
            "status": .stringConvertible(slot.status),
            "bytes": .stringConvertible(slot.bodyBytes),
            "duration_ms": .stringConvertible(Self.milliseconds(from: slot.startedAt, to: now)),
            "request_id": .string(slot.requestID),
        ])
    }

    static func loggedPath(_ path: String) -> String {
        guard path.utf8.count > maximumLoggedPath else { return path }
        return String(decoding: path.utf8.prefix(maximumLoggedPath), as: UTF8.self) + "…"
    }

    /// Milliseconds between two `uv_hrtime` readings, with microsecond resolution (`0.123`).
    static func milliseconds(from start: UInt64, to end: UInt64) -> Double {
        Double((end &- start) / 1000) / 1000
    }
}
