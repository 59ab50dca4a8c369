/// A rejected region input. `pointer` is an RFC 6901 JSON pointer to the offending value (for
/// example `/coordinates/0/3`) so an API client can show the user exactly what to fix.
public struct GeoError: Error, Hashable, Sendable, CustomStringConvertible {
    public let pointer: String
    public let detail: String

    public init(pointer: String, detail: String) {
        self.pointer = pointer
        self.detail = detail
    }

    public var description: String { "\(pointer.isEmpty ? "/" : pointer): \(detail)" }
}
