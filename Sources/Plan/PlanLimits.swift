/// Bounds on what one style and its TileJSONs may ask for, so a hostile or broken document
/// cannot make the server allocate without limit. The defaults are far above real styles
/// (OpenMapTiles styles have ~100 layers, 1 source, 3–6 font stacks).
public struct PlanLimits: Hashable, Sendable {
    /// Largest style or TileJSON document accepted, in bytes.
    public var maxDocumentBytes = 16 << 20
    public var maxSources = 1_000
    public var maxLayers = 10_000
    /// Each stack costs up to 256 glyph requests.
    public var maxFontStacks = 256
    public var maxSprites = 64
    public var maxExpressionDepth = 64

    public init(
        maxDocumentBytes: Int = 16 << 20, maxSources: Int = 1_000, maxLayers: Int = 10_000,
        maxFontStacks: Int = 256, maxSprites: Int = 64, maxExpressionDepth: Int = 64
    ) {
        self.maxDocumentBytes = maxDocumentBytes
        self.maxSources = maxSources
        self.maxLayers = maxLayers
        self.maxFontStacks = maxFontStacks
        self.maxSprites = maxSprites
        self.maxExpressionDepth = maxExpressionDepth
    }
}
