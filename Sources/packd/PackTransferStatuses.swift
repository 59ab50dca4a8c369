import API
import Fetch
import Packs

/// The fetcher's view of each pack — transfers on the wire, the host holding it back — as the
/// API shows it in `progress`. Fetcher owners are pack ids (`FetcherUpstream`'s own owner is not
/// a pack). Loop thread.
enum PackTransferStatuses {
    static func of(_ fetcher: Fetcher, clock: WallClock = .system) -> [Int64: PackTransferStatus] {
        var statuses: [Int64: PackTransferStatus] = [:]
        let now = ContinuousClock.now
        for owner in fetcher.ownersSending where owner != FetcherUpstream.owner {
            let packID = Int64(bitPattern: owner)
            guard packID > 0 else { continue }
            let throttled = fetcher.throttle(owner: owner).map { wire($0, now: now, wallNow: clock.now) }
            statuses[packID] = PackTransferStatus(transfersInFlight: Int64(fetcher.transfersInFlight(owner: owner)),
                                                  throttled: throttled)
        }
        return statuses
    }

    /// `until` on the wall clock, rounded up to the second: a client waiting until then finds
    /// the pause over.
    static func wire(_ host: HostThrottle, now: ContinuousClock.Instant, wallNow: Int64) -> PackThrottle {
        let reason: PackThrottle.Reason = switch host.reason {
        case .retryAfter: .retryAfter
        case .rateLimited: .rateLimited
        case .errors: .errors
        }
        let until = host.until.map { until in
            let ahead = until - now
            let (seconds, attoseconds) = ahead.components
            return Timestamp(wallNow + max(0, seconds + (attoseconds > 0 ? 1 : 0)))
        }
        return PackThrottle(host: host.host, reason: reason, until: until)
    }
}
