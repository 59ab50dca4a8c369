/// Bounds how many exports and imports run at once. Each holds a libuv pool thread (of four by
/// default) for as long as it builds or checks a file, so without a bound a few large exports
/// would starve every other read of the API. Loop thread only.
public final class FileTransferSlots {
    public let limit: Int
    public private(set) var inUse = 0

    public init(limit: Int = 2) {
        self.limit = max(1, limit)
    }

    /// Takes a slot, or answers false when all are taken (the caller answers 503).
    func acquire() -> Bool {
        guard inUse < limit else { return false }
        inUse += 1
        return true
    }

    func release() {
        inUse = max(0, inUse - 1)
    }
}
