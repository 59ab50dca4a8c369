import Packs

/// A symbol layer that can draw text, as glyph subsetting reads it: where its features come from
/// (source and source layer), at which zooms it is laid out, its filter, its `text-field`, the
/// case transforms it can apply, the font stacks it can use, and whether its labels may be laid
/// out vertically. Everything as expressions (legacy filters, functions and token strings
/// converted as MapLibre converts them).
public struct LabelLayer: Hashable, Sendable {
    public enum Transform: String, Hashable, Sendable, CaseIterable { case none, uppercase, lowercase }

    public let id: String
    public let source: String
    /// nil for a GeoJSON source (and ignored there).
    public let sourceLayer: String?
    public let minZoom: Double
    public let maxZoom: Double
    let filter: JSONValue?
    let textField: JSONValue
    public let transforms: Set<Transform>
    /// The stacks of `text-font` (every output of an expression), or MapLibre's default.
    public let fonts: [[String]]
    /// Line placement with map alignment, or a vertical writing mode: CJK labels may then be drawn
    /// vertically, with vertical punctuation.
    public let mayDrawVertically: Bool

    /// The label layer of a style layer, nil when the layer cannot draw text (not a symbol
    /// layer, no `text-field`, an empty `text-font`, no source).
    init?(_ layer: [String: JSONValue]) {
        guard layer["type"]?.stringValue == "symbol", let id = layer["id"]?.stringValue,
              let source = layer["source"]?.stringValue,
              let layout = layer["layout"]?.objectValue, let field = layout["text-field"] else { return nil }
        if case .string("") = field { return nil }
        let fonts = layout["text-font"].map(FontStackOutputs.stacks) ?? [FontStackCollector.defaultStack]
        if case .array(let stack)? = layout["text-font"], stack.isEmpty { return nil }
        self.id = id
        self.source = source
        sourceLayer = layer["source-layer"]?.stringValue
        minZoom = layer["minzoom"]?.numberValue ?? 0
        maxZoom = layer["maxzoom"]?.numberValue ?? .infinity
        filter = layer["filter"].map(LegacyStyleValues.filterExpression)
        textField = LegacyStyleValues.textExpression(field)
        self.fonts = fonts
        switch layout["text-transform"] {
        case nil, .string("none")?: transforms = [.none]
        case .string(let name)?: transforms = [Transform(rawValue: name) ?? .none]
        default: transforms = Set(Transform.allCases)
        }
        let placement = layout["symbol-placement"]
        let alignment = layout["text-rotation-alignment"]
        let alongLines = placement != nil && placement != .string("point") && alignment != .string("viewport")
        let writingModes = layout["text-writing-mode"]?.arrayValue ?? []
        let vertical = writingModes.contains(.string("vertical")) || (writingModes.isEmpty ? false : writingModes.contains { $0.stringValue == nil })
        mayDrawVertically = alongLines || vertical
    }

    /// Whether MapLibre lays this layer out in tiles of `zoom`: layers are laid out at the tile's
    /// zoom, and a tile of the source's `maxzoom` is also laid out at every zoom above (overzoomed).
    public func isLaidOut(tileZoom zoom: Int, sourceMaxZoom: Int) -> Bool {
        let lower = Double(zoom)
        let upper = zoom >= sourceMaxZoom ? Double.infinity : lower + 1
        return minZoom < upper && maxZoom > lower
    }

    /// Whether a feature passes the filter: false only when it surely does not.
    func accepts(_ feature: LabelExpression) -> Bool {
        guard let filter else { return true }
        return feature.evaluate(filter).isTrue != false
    }
}
