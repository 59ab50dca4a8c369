/// What a pack's plan needs, known once its style and TileJSONs are in (`precise`), or a
/// template region's count known at creation.
public struct ExpectedCounts: Sendable, Equatable, Hashable, Codable {
    public var resources: Int64
    public var tiles: Int64
    public var precise: Bool

    public init(resources: Int64, tiles: Int64, precise: Bool) {
        self.resources = resources
        self.tiles = tiles
        self.precise = precise
    }
}
