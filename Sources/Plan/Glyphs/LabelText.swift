import Packs

/// A piece of text a label may draw, in the font stacks of its `format` section (nil: the
/// layer's `text-font`). Only which characters occur matters, never their order.
public struct LabelText: Hashable, Sendable {
    public var text: String
    /// Font stacks of a `format` section's `text-font`; nil for the layer's own.
    public var fonts: [[String]]?

    public init(_ text: String, fonts: [[String]]? = nil) {
        self.text = text
        self.fonts = fonts
    }
}

/// What evaluating an expression for one feature can give: every value it can take when they can
/// be listed (a handful), and every piece of text it can contribute when drawn. Unknown inputs
/// (the zoom, a condition that cannot be decided) make `values` nil and keep every branch's
/// text: the text is always a superset of what MapLibre could draw.
struct Evaluation {
    /// The values the expression can take; nil when they cannot be listed.
    var values: [JSONValue]?
    var texts: [LabelText]

    /// Values listed beyond this are given up (nil): conditions then keep every branch.
    static let maximumValues = 16

    static let unknown = Evaluation(values: nil, texts: [])

    init(values: [JSONValue]?, texts: [LabelText]) {
        self.values = values.flatMap { $0.count <= Self.maximumValues ? Self.unique($0) : nil }
        self.texts = texts
    }

    /// One known value; its text is how MapLibre turns it into a string.
    init(_ value: JSONValue) {
        self.init(values: [value], texts: Self.text(of: value).map { [LabelText($0)] } ?? [])
    }

    init(known values: [JSONValue]) {
        self.init(values: values, texts: values.compactMap { Self.text(of: $0).map { LabelText($0) } })
    }

    static func booleans(_ values: Set<Bool>?) -> Evaluation {
        guard let values else { return Evaluation(values: nil, texts: [LabelText("truefalse")]) }
        return Evaluation(known: values.sorted { !$0 && $1 }.map(JSONValue.bool))
    }

    /// Every value is known to be `true` (nil: unknown).
    var isTrue: Bool? {
        guard let values, !values.isEmpty else { return nil }
        if values.allSatisfy({ $0 == .bool(true) }) { return true }
        if values.allSatisfy({ $0 != .bool(true) }) { return false }
        return nil
    }

    func merged(with other: Evaluation) -> Evaluation {
        Evaluation(values: values.flatMap { mine in other.values.map { mine + $0 } }, texts: texts + other.texts)
    }

    /// The text of every value or, when unknown, every text (for `to-string` and friends).
    var asText: Evaluation {
        guard let values else { return Evaluation(values: nil, texts: texts) }
        return Evaluation(values: values.map { .string(Self.text(of: $0) ?? "") }, texts: texts)
    }

    /// Characters that can appear in a number as MapLibre writes it (`toString`, `number-format`
    /// without a locale): digits, sign, exponent, `Infinity`, `NaN`.
    static let numberAlphabet = "0123456789-+.eEInfinityNaN"

    /// `toString` of the expression language: strings as they are, numbers as digits,
    /// booleans and null as words, arrays and objects as JSON text.
    static func text(of value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .bool(let flag): return flag ? "true" : "false"
        case .integer, .number: return numberAlphabet
        case .string(let text): return text
        case .array(let values): return "[],\"" + values.compactMap(text(of:)).joined()
        case .object(let values): return "{}:,\"" + values.map { $0.key + (text(of: $0.value) ?? "null") }.joined()
        }
    }

    private static func unique(_ values: [JSONValue]) -> [JSONValue] {
        var seen: Set<JSONValue> = []
        return values.filter { seen.insert($0).inserted }
    }
}
