import CUV
import Glibc
import Logging

/// Makes running out of file descriptors visible, at most one warning per interval (with the
/// count since the last one): under fd exhaustion every waiting client fails, and a line each
/// would flood the log while the server keeps serving.
///
/// libuv hides most of these failures: on EMFILE it closes a reserved descriptor, accepts and
/// closes the waiting clients, and never calls back. So besides the errors that do reach us, a
/// connection whose descriptor lands in the last `headroom` slots of RLIMIT_NOFILE is taken as
/// the sign (Linux hands out the lowest free descriptor, so a high one means the table is full).
struct AcceptFailureLog {
    let interval: UInt64
    /// The soft RLIMIT_NOFILE at start, if it is finite.
    let descriptorLimit: Int?
    let headroom: Int
    private var lastWarningAt: UInt64?
    private var suppressed = 0

    /// Failed accepts and accepts at the descriptor limit since start.
    private(set) var total = 0

    init(intervalMilliseconds: UInt64 = 1000, headroom: Int = 8) {
        interval = intervalMilliseconds
        self.headroom = headroom
        var limit = rlimit()
        if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int32.max) {
            descriptorLimit = Int(limit.rlim_cur)
        } else {
            descriptorLimit = nil
        }
    }

    /// An accept that libuv reported as failed.
    mutating func record(_ status: Int32, now: UInt64, logger: Logger) {
        warn("cannot accept a connection; still serving open connections", [
            "error": .string(String(cString: uv_err_name(status))),
            "reason": .string(String(cString: uv_strerror(status))),
        ], now: now, logger: logger)
    }

    /// A successful accept: checks how close its descriptor is to the limit.
    mutating func checkDescriptor(_ descriptor: Int32, now: UInt64, logger: Logger) {
        guard let descriptorLimit, Int(descriptor) >= descriptorLimit - headroom else { return }
        warn(
            "file descriptors nearly exhausted: further clients are closed unanswered (EMFILE) until connections end; raise `ulimit -n`",
            ["descriptor": .stringConvertible(descriptor), "descriptor_limit": .stringConvertible(descriptorLimit)],
            now: now, logger: logger
        )
    }

    private mutating func warn(_ message: Logger.Message, _ metadata: Logger.Metadata, now: UInt64, logger: Logger) {
        total += 1
        if let last = lastWarningAt, now &- last < interval {
            suppressed += 1
            return
        }
        var metadata = metadata
        if suppressed > 0 { metadata["suppressed_since_last_warning"] = .stringConvertible(suppressed) }
        logger.warning(message, metadata: metadata)
        lastWarningAt = now
        suppressed = 0
    }
}
