import Packs

/// Gathers the glyph ranges labels need, feature by feature, as MapLibre's symbol layout
/// requests them (`SymbolLayout`'s glyph dependencies): for each feature a layer's filter
/// accepts, the text its `text-field` can draw — after `text-transform` — in UTF-16 code units,
/// with Arabic presentation forms and, for labels that may be drawn vertically, vertical
/// punctuation; plus the range `0-255` of every stack that draws anything (spaces, digits and
/// Latin punctuation, which nearly every label has). A value: tiles can be gathered apart and
/// merged (`formUnion`).
public struct LabelGlyphs: Hashable, Sendable {
    public private(set) var needs = GlyphNeeds()
    /// Features whose text was gathered (for reports and tests).
    public private(set) var labelledFeatures = 0
    /// Texts already gathered, per layer: the same name in the tiles of every zoom is gathered
    /// once. Its ranges are in `needs` already (which only grows), so a text seen again costs its
    /// evaluation and a lookup. Bounded: emptied when full, so memory stays flat.
    private var seen: Set<SeenText> = []
    static let maximumSeen = 50_000

    private struct SeenText: Hashable, Sendable {
        let layer: String
        let texts: [LabelText]
    }

    public init() {}

    public static func == (lhs: LabelGlyphs, rhs: LabelGlyphs) -> Bool {
        lhs.needs == rhs.needs && lhs.labelledFeatures == rhs.labelledFeatures
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(needs)
        hasher.combine(labelledFeatures)
    }

    /// Adds what `layer` draws for `feature`.
    public mutating func add(_ feature: some LabelFeature, layer: LabelLayer) {
        let expression = LabelExpression(feature: feature)
        guard layer.accepts(expression) else { return }
        let texts = expression.evaluate(layer.textField).texts
        guard !texts.isEmpty else { return }
        let key = SeenText(layer: layer.id, texts: texts)
        if seen.contains(key) {
            labelledFeatures += 1
            return
        }
        // Characters per font choice (nil: the layer's stacks).
        var scalars: [[[String]]?: Set<UInt32>] = [:]
        var upright = false
        for piece in texts {
            // The untransformed text too: MapLibre's case mapping (ICU, JavaScript) and Swift's
            // could differ in a corner of Unicode, and a range too many costs little.
            for transform in layer.transforms.union([.none]) {
                let text: String
                switch transform {
                case .none: text = piece.text
                case .uppercase: text = LabelExpression.uppercased(piece.text)
                case .lowercase: text = LabelExpression.lowercased(piece.text)
                }
                for scalar in text.unicodeScalars {
                    scalars[piece.fonts, default: []].insert(scalar.value)
                    if !upright, ShapingExtras.isUprightInVerticalText(scalar.value) { upright = true }
                }
            }
        }
        var drew = false
        for (fonts, values) in scalars where !values.isEmpty {
            var ranges = GlyphRangeSet()
            for value in values {
                Self.insert(value, into: &ranges)
                if upright, layer.mayDrawVertically, let vertical = ShapingExtras.verticalPunctuation[value] {
                    Self.insert(vertical, into: &ranges)
                }
            }
            for form in ShapingExtras.shapedForms(of: values) { Self.insert(form, into: &ranges) }
            ranges.insert(rangeContaining: 0)
            needs.add(ranges, to: fonts ?? layer.fonts)
            drew = true
        }
        if drew {
            labelledFeatures += 1
            if seen.count >= Self.maximumSeen { seen.removeAll(keepingCapacity: true) }
            seen.insert(key)
        }
    }

    public mutating func formUnion(_ other: LabelGlyphs) {
        needs.formUnion(other.needs)
        labelledFeatures += other.labelledFeatures
    }

    private static func insert(_ value: UInt32, into ranges: inout GlyphRangeSet) {
        if let scalar = Unicode.Scalar(value) { ranges.insert(scalar) }
    }
}
