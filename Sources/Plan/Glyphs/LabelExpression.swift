import Packs

/// Evaluates a style expression for one feature the way glyph subsetting needs it: exactly where
/// the feature decides (a property compared with a literal, a `match` on a class), and by keeping
/// every branch where it cannot (the zoom, feature state, an operator it does not model). What
/// it returns holds every value the expression can take, or says it cannot list them, and every
/// piece of text it can draw — never fewer characters than MapLibre could draw.
///
/// Numbers are `.number` throughout (features and style JSON are read that way).
struct LabelExpression {
    let feature: any LabelFeature
    /// `let` bindings in scope.
    private var bindings: [String: Evaluation] = [:]
    private let maximumDepth: Int

    init(feature: any LabelFeature, maximumDepth: Int = 64) {
        self.feature = feature
        self.maximumDepth = maximumDepth
    }

    func evaluate(_ expression: JSONValue) -> Evaluation {
        evaluate(expression, depth: 0)
    }

    private func evaluate(_ expression: JSONValue, depth: Int) -> Evaluation {
        guard depth <= maximumDepth else { return .unknown }
        guard case .array(let items) = expression, let first = items.first else { return Evaluation(expression) }
        guard case .string(let op) = first else { return Evaluation(expression) }
        let arguments = Array(items.dropFirst())
        func argument(_ index: Int) -> Evaluation {
            index < arguments.count ? evaluate(arguments[index], depth: depth + 1) : Evaluation(.null)
        }
        func all() -> [Evaluation] { arguments.map { evaluate($0, depth: depth + 1) } }

        switch op {
        case "literal":
            return arguments.first.map { Evaluation($0) } ?? Evaluation(.null)
        case "get":
            return property(key: argument(0), object: arguments.count > 1 ? argument(1) : nil)
        case "has":
            guard arguments.count == 1, let keys = argument(0).values else { return .booleans(nil) }
            return .booleans(Set(keys.map { key in key.stringValue.map { feature.property($0) != nil } ?? false }))
        case "properties":
            return Evaluation(.object(feature.properties))
        case "id":
            return Evaluation(feature.id ?? .null)
        case "geometry-type":
            guard let base = feature.baseGeometryType else { return Evaluation(values: nil, texts: [LabelText("MultiPointLineStringPolygon")]) }
            return Evaluation(known: feature.mayBeMulti ? [.string(base), .string("Multi" + base)] : [.string(base)])
        case "$type":  // the legacy filter key: the base type only
            return feature.baseGeometryType.map { Evaluation(.string($0)) } ?? .unknown
        case "zoom", "feature-state", "heatmap-density", "line-progress", "accumulated", "elevation",
             "is-supported-script", "within", "distance", "global-state", "config", "resolved-locale", "collator":
            return Evaluation(values: nil, texts: [LabelText(Evaluation.numberAlphabet + "truefalse")])
        case "let":
            var scope = self
            var index = 0
            while index + 1 < arguments.count - 1 {
                if let name = arguments[index].stringValue { scope.bindings[name] = scope.evaluate(arguments[index + 1], depth: depth + 1) }
                index += 2
            }
            return arguments.last.map { scope.evaluate($0, depth: depth + 1) } ?? .unknown
        case "var":
            return arguments.first?.stringValue.flatMap { bindings[$0] } ?? .unknown
        case "to-string", "string":
            return all().reduce(Evaluation(values: [], texts: [])) { $0.merged(with: $1.asText) }
        case "number", "boolean", "object", "array", "to-number", "to-boolean", "to-color", "coerce":
            return all().reduce(Evaluation(values: nil, texts: [])) { $0.merged(with: $1) }
        case "concat":
            return concat(all())
        case "upcase", "downcase":
            return transform(argument(0), op == "upcase" ? .uppercase : .lowercase)
        case "case":
            return conditional(arguments, depth: depth)
        case "match":
            return match(arguments, depth: depth)
        case "coalesce":
            return coalesce(arguments, depth: depth)
        case "$one-of":  // every argument (legacy functions)
            return outputs(arguments, indices: Array(arguments.indices), depth: depth)
        case "step":
            // Input, then outputs at 1, 3, 5, …: every output unless the input is known.
            return outputs(arguments, indices: Array(stride(from: 1, to: arguments.count, by: 2)), depth: depth)
        case "format":
            return format(arguments, depth: depth)
        case "number-format":
            return Evaluation(values: nil, texts: [LabelText(LabelExpression.formattedNumberCharacters)])
        case "image":
            return Evaluation(values: nil, texts: [])
        case "typeof":
            return Evaluation(values: nil, texts: [LabelText("stringnumberbooleanobjectarraynullcolorvalue")])
        case "!":
            return .booleans(argument(0).isTrue.map { [!$0] })
        case "all", "any":
            return logical(op, arguments, depth: depth)
        case "==", "!=", "<", "<=", ">", ">=":
            return compare(op, argument(0), argument(1))
        case "in":
            return contains(needle: argument(0), haystack: argument(1))
        default:
            // An operator not modelled: its value is unknown, and it can only draw what its
            // arguments hold (`slice`, `at`, arithmetic…).
            return Evaluation(values: nil, texts: all().flatMap(\.texts))
        }
    }

    // MARK: Properties

    private func property(key: Evaluation, object: Evaluation?) -> Evaluation {
        if let object {
            guard let keys = key.values, let objects = object.values else { return Evaluation(values: nil, texts: object.texts) }
            return Evaluation(known: keys.flatMap { key in
                objects.map { object in key.stringValue.flatMap { object.objectValue?[$0] } ?? .null }
            })
        }
        guard let keys = key.values else {
            // A key known only at run time: any property of the feature.
            return Evaluation(values: nil, texts: feature.properties.values.compactMap { Evaluation.text(of: $0).map { LabelText($0) } })
        }
        return Evaluation(known: keys.map { key in key.stringValue.flatMap { feature.property($0) } ?? .null })
    }

    // MARK: Text

    private func concat(_ parts: [Evaluation]) -> Evaluation {
        var values: [String]? = [""]
        for part in parts {
            guard let current = values, let options = part.values,
                  current.count * options.count <= Evaluation.maximumValues else { values = nil; continue }
            values = current.flatMap { prefix in options.map { prefix + (Evaluation.text(of: $0) ?? "") } }
        }
        return Evaluation(values: values.map { $0.map(JSONValue.string) }, texts: parts.flatMap(\.texts))
    }

    enum Case { case uppercase, lowercase }

    private func transform(_ input: Evaluation, _ direction: Case) -> Evaluation {
        func change(_ text: String) -> String {
            direction == .uppercase ? Self.uppercased(text) : Self.lowercased(text)
        }
        let values = input.values?.map { value -> JSONValue in .string(change(Evaluation.text(of: value) ?? "")) }
        // The text keeps its original characters too: MapLibre's case mapping (ICU, JavaScript)
        // and Swift's agree on every script packd knows of, and where they might not, both are in.
        return Evaluation(values: values, texts: input.texts + input.texts.map { LabelText(change($0.text), fonts: $0.fonts) })
    }

    /// `toUpperCase`: the full Unicode mapping (ß → SS), as JavaScript and ICU do.
    static func uppercased(_ text: String) -> String { text.uppercased() }

    /// `toLowerCase`, with both sigmas where a capital sigma lowers (final or not depends on
    /// what follows, which a piece of text cannot know).
    static func lowercased(_ text: String) -> String {
        let lowered = text.lowercased()
        return text.unicodeScalars.contains("\u{03A3}") ? lowered + "\u{03C3}\u{03C2}" : lowered
    }

    /// `number-format`: digits of the scripts locales use, separators, signs, percent and the
    /// currency symbols (whatever the locale and currency options say).
    static let formattedNumberCharacters: String = {
        var text = Evaluation.numberAlphabet + ",.%\u{00A0}\u{202F}\u{2009}\u{2212}\u{066B}\u{066C}\u{066A}\u{061C}\u{200E}\u{200F}'"
        let digitBlocks: [ClosedRange<UInt32>] = [
            0x0660...0x0669, 0x06F0...0x06F9, 0x0966...0x096F, 0x09E6...0x09EF, 0x0E50...0x0E59, 0x1040...0x1049,
            0x20A0...0x20C0, 0x00A2...0x00A5,
        ]
        for block in digitBlocks { for value in block { if let scalar = Unicode.Scalar(value) { text.unicodeScalars.append(scalar) } } }
        return text
    }()

    private func format(_ arguments: [JSONValue], depth: Int) -> Evaluation {
        var texts: [LabelText] = []
        var index = 0
        while index < arguments.count {
            let section = evaluate(arguments[index], depth: depth + 1)
            var fonts: [[String]]?
            if index + 1 < arguments.count, case .object(let options) = arguments[index + 1] {
                if let font = options["text-font"] { fonts = FontStackOutputs.stacks(of: font) }
                index += 2
            } else {
                index += 1
            }
            texts += section.texts.map { LabelText($0.text, fonts: fonts ?? $0.fonts) }
        }
        return Evaluation(values: nil, texts: texts)
    }

    // MARK: Branches

    private func conditional(_ arguments: [JSONValue], depth: Int) -> Evaluation {
        var result = Evaluation(values: [], texts: [])
        var index = 0
        while index + 1 < arguments.count {
            switch evaluate(arguments[index], depth: depth + 1).isTrue {
            case true?: return result.merged(with: evaluate(arguments[index + 1], depth: depth + 1))
            case false?: break
            case nil: result = result.merged(with: evaluate(arguments[index + 1], depth: depth + 1))
            }
            index += 2
        }
        return arguments.count % 2 == 1 ? result.merged(with: evaluate(arguments[arguments.count - 1], depth: depth + 1)) : result
    }

    private func match(_ arguments: [JSONValue], depth: Int) -> Evaluation {
        guard arguments.count >= 2 else { return .unknown }
        let input = evaluate(arguments[0], depth: depth + 1)
        var result = Evaluation(values: [], texts: [])
        var unmatched = input.values.map(Set.init) ?? []
        var index = 1
        while index + 1 < arguments.count {
            let labels = arguments[index].arrayValue ?? [arguments[index]]
            let taken: Bool
            if let inputs = input.values {
                let hits = inputs.filter { value in labels.contains { Self.equal($0, value) == true } }
                unmatched.subtract(hits)
                taken = !hits.isEmpty
            } else {
                taken = true
            }
            if taken { result = result.merged(with: evaluate(arguments[index + 1], depth: depth + 1)) }
            index += 2
        }
        if input.values == nil || !unmatched.isEmpty {
            result = result.merged(with: evaluate(arguments[arguments.count - 1], depth: depth + 1))
        }
        return result
    }

    private func coalesce(_ arguments: [JSONValue], depth: Int) -> Evaluation {
        var result = Evaluation(values: [], texts: [])
        for argument in arguments {
            let candidate = evaluate(argument, depth: depth + 1)
            if let values = candidate.values, values.allSatisfy({ $0 == .null }) { continue }
            result = result.merged(with: candidate)
            if let values = candidate.values, !values.contains(.null) { return result }
        }
        return result
    }

    private func outputs(_ arguments: [JSONValue], indices: [Int], depth: Int) -> Evaluation {
        indices.filter { $0 < arguments.count }.reduce(Evaluation(values: [], texts: [])) {
            $0.merged(with: evaluate(arguments[$1], depth: depth + 1))
        }
    }

    private func logical(_ op: String, _ arguments: [JSONValue], depth: Int) -> Evaluation {
        let decisive = op == "any"
        var unknown = false
        for argument in arguments {
            switch evaluate(argument, depth: depth + 1).isTrue {
            case decisive?: return .booleans([decisive])
            case nil: unknown = true
            default: break
            }
        }
        return .booleans(unknown ? nil : [!decisive])
    }

    // MARK: Comparisons

    private func compare(_ op: String, _ left: Evaluation, _ right: Evaluation) -> Evaluation {
        guard let lefts = left.values, let rights = right.values else { return .booleans(nil) }
        var outcomes: Set<Bool> = []
        for a in lefts {
            for b in rights {
                let outcome: Bool?
                switch op {
                case "==": outcome = Self.equal(a, b)
                case "!=": outcome = Self.equal(a, b).map { !$0 }
                default: outcome = Self.order(a, b).map { order in
                    switch op {
                    case "<": order < 0
                    case "<=": order <= 0
                    case ">": order > 0
                    default: order >= 0
                    }
                }
                }
                guard let outcome else { return .booleans(nil) }
                outcomes.insert(outcome)
            }
        }
        return .booleans(outcomes.count == 1 ? outcomes : nil)
    }

    /// `==` of the expression language: values of different types are unequal.
    static func equal(_ a: JSONValue, _ b: JSONValue) -> Bool? {
        switch (a, b) {
        case (.array, _), (_, .array), (.object, _), (_, .object): return a == b ? true : nil
        default:
            if let x = a.numberValue, let y = b.numberValue { return x == y }
            return a == b
        }
    }

    /// -1, 0, 1 for two numbers or two strings; nil otherwise (an error MapLibre reports).
    static func order(_ a: JSONValue, _ b: JSONValue) -> Int? {
        if let x = a.numberValue, let y = b.numberValue { return x < y ? -1 : (x == y ? 0 : 1) }
        if let x = a.stringValue, let y = b.stringValue {
            // JavaScript compares strings by UTF-16 code units.
            return x.utf16.lexicographicallyPrecedes(y.utf16) ? -1 : (x == y ? 0 : 1)
        }
        return nil
    }

    private func contains(needle: Evaluation, haystack: Evaluation) -> Evaluation {
        guard let needles = needle.values, let stacks = haystack.values else { return .booleans(nil) }
        var outcomes: Set<Bool> = []
        for item in needles {
            for stack in stacks {
                switch stack {
                case .string(let text):
                    guard let part = item.stringValue else { return .booleans(nil) }
                    outcomes.insert(text.contains(part))
                case .array(let values):
                    outcomes.insert(values.contains { Self.equal($0, item) == true })
                default:
                    return .booleans(nil)
                }
            }
        }
        return .booleans(outcomes.count == 1 ? outcomes : nil)
    }
}
