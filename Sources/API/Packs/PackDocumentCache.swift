import Packs

/// Rendered pack documents (bytes and ETag) that `GET /v1/packs/{id}` answers from on the loop,
/// without a thread-pool hop, a SQLite read, a render and a SHA-256 each. Loop thread only.
///
/// Truthfulness comes from a `Tag` per pack, never from remembering which code writes a pack:
/// - `store` is the store's `documentChanges(of:)`, which moves after every commit that may have
///   changed the pack's rows (state changes, PATCH, DELETE, suspend/resume, imports, reset,
///   invalidation, its download's batches…) and before its completion, `onCommit` or any event it
///   causes. The embedded store learns from SQLite which packs' rows a batch changed, so a
///   download's commits leave the entries of packs it does not write valid — under a download
///   the polls of other packs stay on the loop rather than each queueing for a pool read.
/// - `local` counts the loop-side changes a document shows without a write: the rolling rates
///   behind `bytes_per_second`/`eta_seconds` and the transfers (`invalidate(_:)` for the pack
///   whose rate was recorded or forgotten; `invalidate()` for all).
/// A fill reads the tag before it reads the store and is kept only if the tag has not moved when
/// it lands, so a read that raced a write is served once and never cached. Two fills under the
/// same tag that disagree (a commit landed between their snapshots before its count moved) drop
/// the entry, so a later hit never shows older bytes than a fill already answered with.
///
/// The rates also change with time alone (a stalled download's rate falls): an `active` pack's
/// entry lives `activeLifetime` (100 ms), so its rate and ETA are at most that old. Other states
/// show no rate, so their entries live until the tag moves.
///
/// Bounded by count and bytes, evicting the least recently filled first: a pack that does not
/// fit is served uncached.
final class PackDocumentCache {
    struct Tag: Equatable {
        var store: UInt64
        var local: UInt64
    }

    struct Entry {
        let body: [UInt8]
        let etag: String
        let tag: Tag
        /// Which fill made it, so the eviction order can skip replaced entries.
        let serial: UInt64
        /// nil: valid until the tag moves.
        let expires: ContinuousClock.Instant?

        var size: Int { body.count + etag.utf8.count + 64 }
    }

    let capacity: Int
    let maximumBytes: Int
    let activeLifetime: Duration
    private var entries: [Int64: Entry] = [:]
    /// Fill order for eviction; ids of replaced or removed entries are skipped when reached.
    private var order: [(packID: Int64, serial: UInt64)] = []
    private var orderStart = 0
    private var serial: UInt64 = 0
    private(set) var bytes = 0
    /// A mark per local invalidation, of one pack or of every pack.
    private var local: PackChangeMarks
    /// Per pack, a tag two fills disagreed under: nothing read under it is kept any more.
    private var conflicted: [Int64: Tag] = [:]

    init(capacity: Int = 4096, maximumBytes: Int = 16 << 20, activeLifetime: Duration = .milliseconds(100)) {
        self.capacity = max(1, capacity)
        self.maximumBytes = maximumBytes
        self.activeLifetime = activeLifetime
        local = PackChangeMarks(capacity: self.capacity)
    }

    var count: Int { entries.count }
    /// Slots in the eviction order, live or not (tests check it stays in proportion).
    var orderSlots: Int { order.count - orderStart }

    /// The tag to read `packID` under, given the store's `documentChanges(of: packID)`: take it
    /// before starting the read a fill comes from.
    func tag(_ packID: Int64, storeChanges: UInt64) -> Tag {
        Tag(store: storeChanges, local: local.value(of: packID))
    }

    /// Something every document shows changed without a store write: every entry is stale.
    func invalidate() {
        local.markEveryPack()
        // Every tag a conflict was recorded under is past.
        conflicted.removeAll(keepingCapacity: true)
    }

    /// Something `packID`'s document shows changed without a store write: its entry is stale.
    func invalidate(_ packID: Int64) {
        local.mark(CollectionOfOne(packID))
    }

    /// The pack's document if it is still what a read now would render.
    func entry(_ packID: Int64, current: Tag) -> Entry? {
        guard let entry = entries[packID] else { return nil }
        guard entry.tag == current, entry.expires.map({ $0 > .now }) ?? true else {
            remove(packID)
            return nil
        }
        return entry
    }

    /// Keeps a document read under `tag` if the tag is still `current`.
    func fill(_ packID: Int64, body: [UInt8], etag: String, active: Bool, tag: Tag, current: Tag) {
        guard tag == current else { return }
        if let conflict = conflicted[packID] {
            guard conflict != tag else { return }
            conflicted[packID] = nil
        }
        if let existing = entries[packID], existing.tag == tag {
            // Same tag, different bytes: one of the two snapshots is older than the other, and
            // a fill still in flight may carry either.
            if existing.body != body {
                remove(packID)
                // Bounded: past the capacity, every tag is made past instead.
                if conflicted.count < capacity { conflicted[packID] = tag } else { invalidate() }
            }
            return
        }
        remove(packID)
        serial &+= 1
        let entry = Entry(body: body, etag: etag, tag: tag, serial: serial, expires: active ? .now + activeLifetime : nil)
        guard entry.size <= maximumBytes / 16 else { return }
        while entries.count >= capacity || bytes + entry.size > maximumBytes, orderStart < order.count {
            let oldest = order[orderStart]
            orderStart += 1
            if entries[oldest.packID]?.serial == oldest.serial { remove(oldest.packID) }
        }
        entries[packID] = entry
        bytes += entry.size
        order.append((packID, entry.serial))
        // Replaced entries leave their slot behind (an active pack refills every lifetime):
        // compact once most slots are dead, so the order stays in proportion to the entries.
        if order.count - orderStart > 2 * entries.count + 64 {
            order = order[orderStart...].filter { entries[$0.packID]?.serial == $0.serial }
            orderStart = 0
        }
    }

    private func remove(_ packID: Int64) {
        guard let old = entries.removeValue(forKey: packID) else { return }
        bytes -= old.size
    }
}
