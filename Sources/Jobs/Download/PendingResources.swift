import Geo
import Plan

/// What a download has yet to start, in order: its fixed resources, then tiles band by band.
/// Tiles wait as coordinates and get their URL only when they start: formatting a whole band's
/// URLs (16,384) in one go held the loop for tens of milliseconds, which every API request
/// arriving meanwhile waited out.
struct PendingResources {
    enum Entry {
        case fixed(PlannedResource)
        case tile(pyramid: Int, TileID, inStartArea: Bool)

        var inStartArea: Bool {
            if case .tile(_, _, let inStartArea) = self { return inStartArea }
            return false
        }

        var isTileOutsideStartArea: Bool {
            if case .tile(_, _, let inStartArea) = self { return !inStartArea }
            return false
        }
    }

    private var entries: [Entry] = []

    private var next = 0

    /// Entries not started yet.
    var count: Int { entries.count - next }
    var isEmpty: Bool { next == entries.count }

    mutating func append(_ entry: Entry) {
        entries.append(entry)
    }

    mutating func append(contentsOf more: some Sequence<Entry>) {
        entries.append(contentsOf: more)
    }

    /// The next entry to start, left in place.
    var first: Entry? { next < entries.count ? entries[next] : nil }

    /// The next entry to start; the started ones are dropped in bulk once they are most of the array.
    mutating func popFirst() -> Entry? {
        guard next < entries.count else { return nil }
        let entry = entries[next]
        next += 1
        if next > 1024, next * 2 > entries.count {
            entries.removeFirst(next)
            next = 0
        }
        return entry
    }
}
