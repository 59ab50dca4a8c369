/// Change counts per pack that never go back, for caches of rendered packs: `count` moves at every
/// change; `value(of:)` — what a cache entry of the pack is tagged with — moves whenever the pack
/// may have changed, and stays put while only other packs change. The writer keeps one for what
/// commits changed (`PackStore.documentChanges(of:)`); the API's document cache one for what the
/// loop changed without a write (rates, transfers). A pure value; the owner guards it.
///
/// Bounded: a mark is kept per pack changed since the last change of every pack; past `capacity`
/// marks they fold into one such change, which moves every pack's value above anything it was.
public struct PackChangeMarks: Sendable {
    /// Changes so far: each one's mark is a new value of it.
    public private(set) var count: UInt64 = 0
    /// The mark of the last change that may have touched every pack.
    private var everyPack: UInt64 = 0
    /// The marks of packs changed alone since then (older ones say nothing more).
    private var packs: [Int64: UInt64] = [:]
    public let capacity: Int

    public init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// What a cache entry for `packID` is tagged with: moved by every change that may have
    /// touched the pack since.
    public func value(of packID: Int64) -> UInt64 {
        max(everyPack, packs[packID] ?? 0)
    }

    /// One change, of `changed` packs only (none: nothing a pack's value shows).
    public mutating func mark(_ changed: some Collection<Int64>) {
        guard packs.count + changed.count <= capacity else { return markEveryPack() }
        count &+= 1
        for packID in changed { packs[packID] = count }
    }

    /// One change that may have touched any pack.
    public mutating func markEveryPack() {
        count &+= 1
        everyPack = count
        packs.removeAll(keepingCapacity: true)
    }
}
