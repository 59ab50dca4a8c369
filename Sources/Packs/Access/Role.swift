/// What a caller may do. Within a tenant `read` < `write` < `admin`, each allowed everything the
/// lower ones are; `operator` stands above tenants (creates, changes and removes them, sets their
/// quotas) and may also do what a tenant's admin may. The order is the comparison.
public enum Role: Int, Comparable, Sendable, CaseIterable, CustomStringConvertible, Codable {
    case read
    case write
    case admin
    case `operator`

    public init?(name: some StringProtocol) {
        switch name {
        case "read": self = .read
        case "write": self = .write
        case "admin": self = .admin
        case "operator": self = .operator
        default: return nil
        }
    }

    public var name: String {
        switch self {
        case .read: "read"
        case .write: "write"
        case .admin: "admin"
        case .operator: "operator"
        }
    }

    public var description: String { name }

    public static func < (left: Role, right: Role) -> Bool { left.rawValue < right.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let role = Role(name: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "a role is read, write, admin or operator"))
        }
        self = role
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(name)
    }
}
