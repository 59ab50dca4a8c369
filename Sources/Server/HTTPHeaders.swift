/// Header fields in arrival order. A list, not a dictionary: names repeat (`Set-Cookie`), order
/// is meaningful, and a request has so few fields that a linear, case-insensitive scan is faster
/// than hashing lowercased copies.
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)]

    public init() { fields = [] }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public mutating func add(_ name: String, _ value: String) {
        fields.append((name: name, value: value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name: name, value: value))
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        for field in fields where field.name.caseInsensitiveEquals(name) {
            return field.value
        }
        return nil
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { $0.name.caseInsensitiveEquals(name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool { self[name] != nil }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }
}

extension String {
    /// ASCII case-insensitive comparison, as header names and tokens need (RFC 9110 §5.1).
    func caseInsensitiveEquals(_ other: String) -> Bool {
        var left = utf8.makeIterator()
        var right = other.utf8.makeIterator()
        while true {
            switch (left.next(), right.next()) {
            case (nil, nil):
                return true
            case let (l?, r?):
                if l == r { continue }
                if l | 0x20 != r | 0x20 { return false }
                let lower = l | 0x20
                if lower < UInt8(ascii: "a") || lower > UInt8(ascii: "z") { return false }
            default:
                return false
            }
        }
    }
}
