import Packs

/// Finds every font stack a style's symbol layers can ask for, as MapLibre's
/// `SymbolLayer::Impl::populateFontStack` does: only layers with a `text-field`; no `text-font`
/// means MapLibre's default stack; a constant array is one stack; an expression or legacy
/// function contributes every stack it can output (`FontStackOutputs`). Data-driven values
/// MapLibre cannot predict (`["get", "font"]`) contribute nothing, as in MapLibre.
struct FontStackCollector {
    /// MapLibre's `text-font` default.
    static let defaultStack = ["Open Sans Regular", "Arial Unicode MS Regular"]

    let limits: PlanLimits
    private(set) var stacks: Set<[String]> = []

    init(limits: PlanLimits) {
        self.limits = limits
    }

    mutating func add(layer: [String: Any], pointer: String) throws(PlanError) {
        guard layer["type"] as? String == "symbol", let layout = layer["layout"] as? [String: Any],
            layout["text-field"] != nil
        else { return }
        let fontPointer = JSONPointer.appending(JSONPointer.appending(pointer, "layout"), "text-font")
        guard let font = layout["text-font"] else {
            try insert([Self.defaultStack], pointer: fontPointer)
            return
        }
        guard let value = StyleJSON.value(font, depth: limits.maxExpressionDepth) else {
            throw PlanError(.styleInvalid, "text-font expression nested deeper than \(limits.maxExpressionDepth)",
                pointer: fontPointer)
        }
        try insert(FontStackOutputs.stacks(of: value), pointer: fontPointer)
    }

    private mutating func insert(_ found: [[String]], pointer: String) throws(PlanError) {
        for stack in found {
            guard stacks.count < limits.maxFontStacks || stacks.contains(stack) else {
                throw PlanError(.documentTooLarge, "more than \(limits.maxFontStacks) font stacks", pointer: pointer)
            }
            stacks.insert(stack)
        }
    }
}

/// The font stacks a `text-font` value can output: a constant array, a legacy
/// `{"stops": …, "default": …}` function, or an expression walked in its output positions
/// (`literal`, `case`, `match`, `step`, `coalesce`, `let`, `array`). Also what a `format`
/// section's `text-font` option names.
enum FontStackOutputs {
    /// Operators that make a `text-font` array an expression rather than a constant stack.
    private static let operators: Set<String> = [
        "literal", "case", "match", "step", "coalesce", "let", "var", "array", "get", "has", "at",
        "concat", "to-string", "string", "feature-state", "properties", "interpolate",
    ]

    static func stacks(of value: JSONValue) -> [[String]] {
        var found: [[String]] = []
        if case .object(let function) = value {
            if let stops = function["stops"]?.arrayValue {
                for stop in stops {
                    if let pair = stop.arrayValue, pair.count == 2, let stack = stack(pair[1]) { found.append(stack) }
                }
            }
            if let fallback = function["default"], let stack = stack(fallback) { found.append(stack) }
        } else {
            collect(value, into: &found)
        }
        var seen: Set<[String]> = []
        return found.filter { seen.insert($0).inserted }
    }

    private static func collect(_ value: JSONValue, into found: inout [[String]]) {
        guard let array = value.arrayValue, !array.isEmpty else { return }
        if let stack = stack(value) {
            found.append(stack)
            return
        }
        guard let op = value.expressionOperator else { return }
        let outputs: [Int]
        switch op {
        case "literal":
            if array.count == 2, let stack = stack(array[1], allowOperators: true) { found.append(stack) }
            return
        case "case":  // ["case", c1, o1, c2, o2, …, fallback]
            outputs = Array(stride(from: 2, to: array.count, by: 2)) + [array.count - 1]
        case "match":  // ["match", input, l1, o1, l2, o2, …, fallback]
            outputs = Array(stride(from: 3, to: array.count, by: 2)) + [array.count - 1]
        case "step":  // ["step", input, o0, s1, o1, …]
            outputs = Array(stride(from: 2, to: array.count, by: 2))
        case "coalesce":
            outputs = Array(1..<array.count)
        case "let", "array":  // the value is the last argument
            outputs = [array.count - 1]
        default:
            return
        }
        for index in Set(outputs).sorted() where index > 0 && index < array.count {
            collect(array[index], into: &found)
        }
    }

    /// A non-empty array of strings that is not an expression.
    private static func stack(_ value: JSONValue, allowOperators: Bool = false) -> [String]? {
        guard let values = value.arrayValue, !values.isEmpty else { return nil }
        let strings = values.compactMap(\.stringValue)
        guard strings.count == values.count else { return nil }
        if !allowOperators, operators.contains(strings[0]) { return nil }
        return strings
    }
}
