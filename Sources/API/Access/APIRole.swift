/// What an API key may do. Ordered: a key may do everything its role and the lower roles may.
public enum APIRole: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible {
    case read
    case write
    case admin

    public init?(name: String) {
        switch name {
        case "read": self = .read
        case "write": self = .write
        case "admin": self = .admin
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .read: "read"
        case .write: "write"
        case .admin: "admin"
        }
    }

    public static func < (left: APIRole, right: APIRole) -> Bool { left.rawValue < right.rawValue }
}
