/// What the fetcher is doing for one pack right now — `progress.transfers_in_flight` and
/// `progress.throttled` — live, never stored: `packd` hands the fetcher's to the event publisher.
public struct PackTransferStatus: Sendable, Equatable {
    public var transfersInFlight: Int64
    public var throttled: PackThrottle?

    public init(transfersInFlight: Int64, throttled: PackThrottle? = nil) {
        self.transfersInFlight = transfersInFlight
        self.throttled = throttled
    }

    /// A pack the fetcher holds nothing for.
    public static let idle = PackTransferStatus(transfersInFlight: 0)
}
