import Packs

/// Pre-expression style values turned into expressions, as MapLibre converts them when it loads a
/// style: legacy filters (`["==", "class", "city"]`), property and zoom functions, and token
/// strings (`"{name} ({ref})"`). What cannot be decided becomes `$one-of` — every output — an
/// internal operator of `LabelExpression`.
enum LegacyStyleValues {
    /// MapLibre's `isExpressionFilter`: whether `filter` is already an expression.
    static func isExpressionFilter(_ filter: JSONValue) -> Bool {
        guard let items = filter.arrayValue, let op = filter.expressionOperator else { return filter.arrayValue == nil }
        switch op {
        case "has":
            return items.count >= 3 || (items.count == 2 && items[1].stringValue == nil)
        case "in":
            return items.count >= 3 && (items[1].stringValue == nil || items[2].arrayValue != nil)
        case "!in", "!has", "none":
            return false
        case "==", "!=", ">", ">=", "<", "<=":
            return items.count != 3 || items[1].arrayValue != nil || items[2].arrayValue != nil
        case "any", "all":
            return items.dropFirst().allSatisfy { isExpressionFilter($0) || $0 == .bool(true) || $0 == .bool(false) }
        default:
            return true
        }
    }

    /// `filter` as an expression.
    static func filterExpression(_ filter: JSONValue) -> JSONValue {
        isExpressionFilter(filter) ? filter : convertFilter(filter)
    }

    private static func convertFilter(_ filter: JSONValue) -> JSONValue {
        guard let items = filter.arrayValue, let op = filter.expressionOperator else { return .bool(true) }
        let rest = Array(items.dropFirst())
        func key(_ index: Int) -> JSONValue {
            switch rest.indices.contains(index) ? rest[index].stringValue : nil {
            case "$type"?: return .array([.string("$type")])
            case "$id"?: return .array([.string("id")])
            case let name?: return .array([.string("get"), .string(name)])
            case nil: return .null
            }
        }
        func literal(_ value: JSONValue) -> JSONValue {
            switch value {
            case .array, .object: .array([.string("literal"), value])
            default: value
            }
        }
        switch op {
        case "all", "any":
            return .array([.string(op)] + rest.map(filterExpression))
        case "none":
            return .array([.string("!"), .array([.string("any")] + rest.map(filterExpression))])
        case "has":
            switch rest.first?.stringValue {
            case "$type"?: return .bool(true)
            case "$id"?: return .array([.string("!="), .array([.string("id")]), .null])
            default: return .array([.string("has")] + rest.prefix(1))
            }
        case "!has":
            return .array([.string("!"), convertFilter(.array([.string("has")] + rest))])
        case "==", "!=", "<", "<=", ">", ">=":
            guard rest.count == 2 else { return .bool(true) }
            return .array([.string(op), key(0), literal(rest[1])])
        case "in", "!in":
            let found = JSONValue.array([.string("any")] + rest.dropFirst().map { .array([.string("=="), key(0), literal($0)]) })
            return op == "in" ? found : .array([.string("!"), found])
        default:
            return .bool(true)
        }
    }

    /// A `text-field` as an expression: a token string becomes a `concat` of its pieces, a legacy
    /// function every output it can have (identity functions read their property).
    static func textExpression(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let text):
            return tokens(text)
        case .object(let function):
            var outputs: [JSONValue] = []
            if function["type"]?.stringValue == "identity", let property = function["property"]?.stringValue {
                outputs.append(.array([.string("to-string"), .array([.string("get"), .string(property)])]))
            }
            for stop in function["stops"]?.arrayValue ?? [] {
                if let pair = stop.arrayValue, pair.count == 2 { outputs.append(textExpression(pair[1])) }
            }
            if let fallback = function["default"] { outputs.append(textExpression(fallback)) }
            return .array([.string("$one-of")] + outputs)
        default:
            return value
        }
    }

    /// `"{name} ({ref})"` → `["concat", ["to-string", ["get", "name"]], " (", …]`, as
    /// MapLibre's `convertTokenStringToExpression`.
    static func tokens(_ text: String) -> JSONValue {
        guard text.contains("{") else { return .string(text) }
        var parts: [JSONValue] = []
        var literal = ""
        var index = text.startIndex
        while index < text.endIndex {
            if text[index] == "{", let close = text[index...].firstIndex(of: "}"),
               case let name = text[text.index(after: index)..<close], !name.isEmpty, !name.contains("{") {
                if !literal.isEmpty { parts.append(.string(literal)) }
                literal = ""
                parts.append(.array([.string("to-string"), .array([.string("get"), .string(String(name))])]))
                index = text.index(after: close)
            } else {
                literal.append(text[index])
                index = text.index(after: index)
            }
        }
        if !literal.isEmpty { parts.append(.string(literal)) }
        return .array([.string("concat")] + parts)
    }
}
