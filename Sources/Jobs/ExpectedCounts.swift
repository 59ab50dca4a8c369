/// What a pack's plan says it will hold, once the style and TileJSONs are known: the totals a
/// progress event is read against.
public struct ExpectedCounts: Sendable, Equatable {
    public let resources: Int64
    public let tiles: Int64
    /// False while documents are missing (never, once the download has them all).
    public let precise: Bool

    public init(resources: Int64, tiles: Int64, precise: Bool) {
        self.resources = resources
        self.tiles = tiles
        self.precise = precise
    }
}
