/// One run of adjacent tiles in a row of a cover: the unit the cover streams, so a row of a
/// continent-sized polygon at z16 costs one value rather than thousands of tile IDs.
public struct TileSpan: Hashable, Sendable {
    public let y: Int
    /// Columns, ascending; spans of one row are disjoint and not adjacent.
    public let xRange: ClosedRange<Int>

    public init(y: Int, xRange: ClosedRange<Int>) {
        self.y = y
        self.xRange = xRange
    }

    public var count: Int { xRange.count }
}
