import Foundation
import Fetch
import Packs

/// The fetcher's view of each pack — transfers on the wire, the host holding it back — as the
/// API shows it in `progress`. Fetcher owners are pack ids (`FetcherUpstream`'s own owner is not
/// a pack). Loop thread.
enum PackTransferStatuses {
    static func of(_ fetcher: Fetcher) -> [Int64: PackTransferStatus] {
        var statuses: [Int64: PackTransferStatus] = [:]
        let now = ContinuousClock.now
        // Sub-second precision: `until` is the pause's monotonic end plus this, so it stays the
        // same second from one call to the next (whole seconds here made it flip by one).
        let wallNow = Date().timeIntervalSince1970
        for owner in fetcher.ownersSending where owner != FetcherUpstream.owner {
            let packID = Int64(bitPattern: owner)
            guard packID > 0 else { continue }
            let throttled = fetcher.throttle(owner: owner).map { wire($0, now: now, wallNow: wallNow) }
            statuses[packID] = PackTransferStatus(transfersInFlight: Int64(fetcher.transfersInFlight(owner: owner)),
                                                  throttled: throttled)
        }
        return statuses
    }

    /// `until` on the wall clock, rounded up to the second: a client waiting until then finds
    /// the pause over.
    static func wire(_ host: HostThrottle, now: ContinuousClock.Instant, wallNow: Double) -> PackThrottle {
        let reason: PackThrottle.Reason = switch host.reason {
        case .retryAfter: .retryAfter
        case .rateLimited: .rateLimited
        case .errors: .errors
        }
        let until = host.until.map { until in
            let (seconds, attoseconds) = (until - now).components
            let ahead = max(0, Double(seconds) + Double(attoseconds) / 1e18)
            return Timestamp(Int64((wallNow + ahead).rounded(.up)))
        }
        return PackThrottle(host: host.host, reason: reason, until: until)
    }
}
