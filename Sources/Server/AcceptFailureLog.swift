import CUV
import Logging

/// Warns about failed accepts (EMFILE/ENFILE when out of file descriptors) at most once per
/// interval, with the count since the last warning: under fd exhaustion libuv reports a failure
/// for every waiting client, and a line each would flood the log while the server keeps serving.
struct AcceptFailureLog {
    let interval: UInt64
    private var lastWarningAt: UInt64?
    private var suppressed = 0

    /// Failed accepts since start; what a test or a metric can check.
    private(set) var total = 0

    init(intervalMilliseconds: UInt64 = 1000) {
        interval = intervalMilliseconds
    }

    mutating func record(_ status: Int32, now: UInt64, logger: Logger) {
        total += 1
        if let last = lastWarningAt, now &- last < interval {
            suppressed += 1
            return
        }
        let name = String(cString: uv_err_name(status))
        let reason = String(cString: uv_strerror(status))
        let earlier = suppressed > 0 ? " (and \(suppressed) more since the last warning)" : ""
        logger.warning("cannot accept a connection: \(name) \(reason)\(earlier); still serving open connections")
        lastWarningAt = now
        suppressed = 0
    }
}
