/// Bounds on untrusted GeoJSON, so a request cannot make the cover sweep (O(vertices) per row)
/// or the recursive reader arbitrarily expensive.
public struct GeoJSONLimits: Sendable, Hashable {
    /// Total positions over the whole geometry, collection members included.
    public var maxVertices: Int
    /// Nesting depth of GeometryCollections; the top-level geometry is depth 1.
    public var maxDepth: Int

    public init(maxVertices: Int = 100_000, maxDepth: Int = 8) {
        self.maxVertices = maxVertices
        self.maxDepth = maxDepth
    }
}
