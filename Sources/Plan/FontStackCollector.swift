/// Finds every font stack a style's symbol layers can ask for, as MapLibre's
/// `SymbolLayer::Impl::populateFontStack` does: only layers with a `text-field`; no `text-font`
/// means MapLibre's default stack; a constant array is one stack; an expression or legacy
/// function contributes every stack it can output (`literal`, `case`, `match`, `step`,
/// `coalesce`, `let`, `array` walked in output positions). Data-driven values MapLibre cannot
/// predict (`["get", "font"]`) contribute nothing, as in MapLibre.
struct FontStackCollector {
    /// MapLibre's `text-font` default.
    static let defaultStack = ["Open Sans Regular", "Arial Unicode MS Regular"]
    /// Operators that make a `text-font` array an expression rather than a constant stack.
    private static let operators: Set<String> = [
        "literal", "case", "match", "step", "coalesce", "let", "var", "array", "get", "has", "at",
        "concat", "to-string", "string", "feature-state", "properties", "interpolate",
    ]

    let limits: PlanLimits
    private(set) var stacks: Set<[String]> = []

    init(limits: PlanLimits) {
        self.limits = limits
    }

    mutating func add(layer: [String: Any], pointer: String) throws(PlanError) {
        guard layer["type"] as? String == "symbol", let layout = layer["layout"] as? [String: Any],
            layout["text-field"] != nil
        else { return }
        guard let font = layout["text-font"] else {
            try insert(Self.defaultStack, pointer: pointer)
            return
        }
        let fontPointer = JSONPointer.appending(JSONPointer.appending(pointer, "layout"), "text-font")
        if let function = font as? [String: Any] {
            try addFunction(function, pointer: fontPointer)
        } else {
            try addOutput(font, pointer: fontPointer, depth: 0)
        }
    }

    /// Legacy `{"stops": [[zoom, stack], …], "default": stack}` functions.
    private mutating func addFunction(_ function: [String: Any], pointer: String) throws(PlanError) {
        if let stops = function["stops"] as? [Any] {
            for (index, stop) in stops.enumerated() {
                if let pair = stop as? [Any], pair.count == 2, let stack = Self.stack(pair[1]) {
                    try insert(stack, pointer: JSONPointer.appending(JSONPointer.appending(pointer, "stops"), index))
                }
            }
        }
        if let fallback = function["default"], let stack = Self.stack(fallback) {
            try insert(stack, pointer: pointer)
        }
    }

    /// `value` stands where a font stack is expected: a stack itself or an expression producing one.
    private mutating func addOutput(_ value: Any, pointer: String, depth: Int) throws(PlanError) {
        guard depth <= limits.maxExpressionDepth else {
            throw PlanError(.styleInvalid, "text-font expression nested deeper than \(limits.maxExpressionDepth)",
                pointer: pointer)
        }
        guard let array = value as? [Any], !array.isEmpty else { return }
        if let stack = Self.stack(array) {
            try insert(stack, pointer: pointer)
            return
        }
        guard let op = array[0] as? String else { return }
        let outputs: [Int]
        switch op {
        case "literal":
            if array.count == 2, let stack = Self.stack(array[1], allowOperators: true) {
                try insert(stack, pointer: pointer)
            }
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
        for index in Set(outputs) where index > 0 && index < array.count {
            try addOutput(array[index], pointer: JSONPointer.appending(pointer, index), depth: depth + 1)
        }
    }

    private mutating func insert(_ stack: [String], pointer: String) throws(PlanError) {
        guard stacks.count < limits.maxFontStacks || stacks.contains(stack) else {
            throw PlanError(.documentTooLarge, "more than \(limits.maxFontStacks) font stacks", pointer: pointer)
        }
        stacks.insert(stack)
    }

    /// A non-empty array of strings that is not an expression.
    private static func stack(_ value: Any, allowOperators: Bool = false) -> [String]? {
        guard let strings = value as? [String], !strings.isEmpty else { return nil }
        if !allowOperators, operators.contains(strings[0]) { return nil }
        return strings
    }
}
