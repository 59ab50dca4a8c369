/// Converting continuous tile coordinates to tile index ranges under the cover's two rules.
enum TileGrid {
    /// Tiles whose open interval (i, i+1) meets the open interval (low, high): the rule for
    /// areas. Empty when `low >= high` or the interval lies outside 0…last+1.
    static func interiorRange(_ low: Double, _ high: Double, last: Int) -> ClosedRange<Int>? {
        guard low < high, high > 0, low < Double(last + 1) else { return nil }
        let first = max(0, Int(low.rounded(.down)))
        let end = min(last, Int(high.rounded(.up)) - 1)
        return first <= end ? first...end : nil
    }

    /// Tiles owning some point of the closed interval [low, high]: tile i owns [i, i+1), and
    /// the last tile also owns the world's far edge. The rule for lines and points.
    static func ownedRange(_ low: Double, _ high: Double, last: Int) -> ClosedRange<Int>? {
        guard low <= high, high >= 0, low <= Double(last + 1) else { return nil }
        return owner(low, last: last)...owner(high, last: last)
    }

    /// The tile owning coordinate `value` (already within 0…last+1).
    static func owner(_ value: Double, last: Int) -> Int {
        min(last, max(0, Int(value.rounded(.down))))
    }

    /// Intersection of two ascending, disjoint range lists, ascending.
    static func intersect(_ a: [ClosedRange<Int>], _ b: [ClosedRange<Int>]) -> [ClosedRange<Int>] {
        var result = [ClosedRange<Int>]()
        var i = 0, j = 0
        while i < a.count, j < b.count {
            let low = max(a[i].lowerBound, b[j].lowerBound)
            let high = min(a[i].upperBound, b[j].upperBound)
            if low <= high { result.append(low...high) }
            if a[i].upperBound < b[j].upperBound { i += 1 } else { j += 1 }
        }
        return result
    }
}
