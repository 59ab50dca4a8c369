/// How many tiles one claim takes: guided self-scheduling, cut at claim time.
///
/// A pack's stored cut (`WorkUnitCut`) is coarse — units of at most `--cluster-unit-tiles` — and
/// a node claiming a unit larger than its part takes only the head of it (`WorkUnitSplit`),
/// leaving the rest pending. Its part is the pack's unclaimed tiles over the cluster's claim
/// slots (live nodes × units a node runs at once of a pack), so the first claims give every
/// slot one part of the pack and every live node several, and parts shrink as the pack drains:
/// the last claims are small, and nodes finish within about a small part of one another instead
/// of one node fetching a 4,096-tile unit alone while the others idle. A part is never below
/// `floor` (each claim, lookup and completion costs a few database round trips and a unit's
/// last transfers leave its slot half-used: a few hundred tiles keep that under a few per cent)
/// and never above `ceiling` (`--cluster-unit-tiles`, the cut's own size).
///
/// Why cut at claim rather than steal from a busy node: what is split is always unclaimed, so no
/// node ever has to give up part of a unit it is downloading. Handing over a leased remainder
/// needs the holder's cooperation (a request, the holder's frontier, a shrunk scope committed
/// before the other node starts), and every mistake there fetches tiles twice. With parts that
/// shrink with the remaining work the tail is already about one small part long, which is what
/// stealing would buy.
public struct ClaimSizing: Hashable, Sendable {
    /// The smallest part a claim splits off (also the smallest remainder it leaves).
    public let floor: Int
    /// The largest part (`--cluster-unit-tiles`).
    public let ceiling: Int

    /// 64 tiles: at 400 tiles/s a node (16 transfers 40 ms away) is through one in a sixth of a
    /// second, while the per-claim costs stay a few milliseconds and the node's other unit keeps
    /// its transfers busy meanwhile. 128 left the tail uneven: a unit under two floors is taken
    /// whole, and with rows of 43 tiles one node took the last 215 + 172 tiles while the others
    /// held 86 each (5.2 s instead of 4.9 s for 5,461 tiles on three nodes with units of 500).
    /// Measured with `packd-bench cluster`: see README, "Cluster mode".
    public static let defaultFloor = 64

    public init(floor: Int = ClaimSizing.defaultFloor, ceiling: Int = WorkUnitCut.defaultUnitTiles) {
        self.ceiling = Swift.max(1, ceiling)
        self.floor = Swift.min(Swift.max(1, floor), self.ceiling)
    }

    /// The part one claim takes when `remaining` tiles of the pack are unclaimed and the cluster
    /// has `slots` claim slots: `remaining / slots` rounded up, within `floor…ceiling`.
    public func part(remaining: Int, slots: Int) -> Int {
        let slots = Swift.max(1, slots)
        let remaining = Swift.max(0, remaining)
        let even = remaining / slots + (remaining % slots == 0 ? 0 : 1)
        return Swift.min(ceiling, Swift.max(floor, even))
    }

    /// Whether a unit of `tiles` is split for a claim of `part`: only when what stays behind is
    /// at least `floor` tiles (no crumbs for the last claims).
    public func splits(_ tiles: Int, part: Int) -> Bool {
        tiles - part >= floor
    }
}
