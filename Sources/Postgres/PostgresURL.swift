/// A validated `postgresql://` (or `postgres://`) connection URL, libpq's URI form:
///
///     postgresql://[user[:password]@][host][:port][/database][?parameter=value&…]
///
/// `host` may be a name, an IPv4 address, a bracketed IPv6 address, or percent-encoded absolute
/// path of a Unix-socket directory (`%2Ftmp%2Fpg`); `?host=/dir` does the same. Only the
/// parameters in `allowedParameters` are accepted, each checked, so the string from a command line
/// or an environment variable can never smuggle other libpq keywords in.
///
/// The password is kept for connecting and appears nowhere else: not in `description`, not in
/// errors (a bad URL's error names the part, never echoes it).
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public let user: String?
    /// nil: libpq's default (its Unix-socket directory).
    public let host: String?
    public let port: Int?
    public let database: String?
    /// Validated query parameters, in URL order (`password` excluded).
    public let parameters: [Parameter]
    let password: String?

    public struct Parameter: Sendable, Equatable {
        public let name: String
        public let value: String
    }

    /// Why a URL was refused: `part` names where (for a problem's pointer or a CLI message),
    /// `reason` says what is wrong without repeating the value.
    public struct Invalid: Error, Equatable, CustomStringConvertible, Sendable {
        public let part: String
        public let reason: String
        public var description: String { "invalid PostgreSQL URL (\(part)): \(reason)" }
    }

    public static let maximumLength = 2048

    /// The libpq parameters a URL may carry.
    public static let allowedParameters: Set<String> = [
        "host", "port", "password", "sslmode", "sslrootcert", "sslcert", "sslkey", "sslcrl", "connect_timeout",
        "application_name", "target_session_attrs", "keepalives", "keepalives_idle", "keepalives_interval",
        "keepalives_count", "tcp_user_timeout", "options", "channel_binding", "gssencmode",
    ]

    /// Whether `text` is meant as a PostgreSQL URL (rather than, say, a SQLite file path).
    public static func looksLikeURL(_ text: String) -> Bool {
        let lower = text.prefix(16).lowercased()
        return lower.hasPrefix("postgresql://") || lower.hasPrefix("postgres://")
    }

    public init(_ text: String) throws(Invalid) {
        guard text.utf8.count <= Self.maximumLength else {
            throw Invalid(part: "url", reason: "longer than \(Self.maximumLength) bytes")
        }
        guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F || $0 == " " }) else {
            throw Invalid(part: "url", reason: "contains spaces or control characters")
        }
        var rest = Substring(text)
        if rest.lowercased().hasPrefix("postgresql://") {
            rest = rest.dropFirst("postgresql://".count)
        } else if rest.lowercased().hasPrefix("postgres://") {
            rest = rest.dropFirst("postgres://".count)
        } else {
            throw Invalid(part: "scheme", reason: "must be postgresql:// or postgres://")
        }
        guard !rest.contains("#") else { throw Invalid(part: "fragment", reason: "a fragment is not allowed") }

        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            path = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
        }
        var authority = rest
        var user: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], part: "user")
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], part: "password")
            } else {
                user = try Self.decode(userInfo, part: "user")
            }
            if user?.isEmpty == true { user = nil }
        }

        var host: String?
        var port: Int?
        var hostPart = authority
        if hostPart.hasPrefix("[") {
            guard let close = hostPart.firstIndex(of: "]") else {
                throw Invalid(part: "host", reason: "unterminated [IPv6] address")
            }
            let address = hostPart[hostPart.index(after: hostPart.startIndex)..<close]
            guard !address.isEmpty, address.allSatisfy({ $0.isHexDigit || $0 == ":" || $0 == "." }) else {
                throw Invalid(part: "host", reason: "not an IPv6 address")
            }
            host = String(address)
            hostPart = hostPart[hostPart.index(after: close)...]
            if !hostPart.isEmpty {
                guard hostPart.hasPrefix(":") else { throw Invalid(part: "host", reason: "unexpected text after ]") }
                port = try Self.port(hostPart.dropFirst())
            }
        } else {
            if let colon = hostPart.lastIndex(of: ":") {
                port = try Self.port(hostPart[hostPart.index(after: colon)...])
                hostPart = hostPart[..<colon]
            }
            if hostPart.contains(",") { throw Invalid(part: "host", reason: "several hosts are not supported") }
            let decoded = try Self.decode(hostPart, part: "host")
            if !decoded.isEmpty { host = try Self.checkedHost(decoded) }
        }

        var database: String?
        if !path.isEmpty {
            let decoded = try Self.decode(path, part: "database")
            guard decoded.utf8.count <= 63 else { throw Invalid(part: "database", reason: "longer than 63 bytes") }
            database = decoded
        }
        if let user, user.utf8.count > 63 { throw Invalid(part: "user", reason: "longer than 63 bytes") }

        var parameters: [Parameter] = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            guard let equals = pair.firstIndex(of: "=") else {
                throw Invalid(part: "query", reason: "parameter without a value")
            }
            let name = try Self.decode(pair[..<equals], part: "query")
            guard Self.allowedParameters.contains(name) else {
                throw Invalid(part: "query.\(name.prefix(40))", reason: "not a supported parameter")
            }
            guard !parameters.contains(where: { $0.name == name }), !(name == "password" && password != nil) else {
                throw Invalid(part: "query.\(name)", reason: "given twice")
            }
            let value = try Self.decode(pair[pair.index(after: equals)...], part: "query.\(name)")
            switch name {
            case "password":
                password = value
                continue
            case "host":
                guard host == nil else { throw Invalid(part: "query.host", reason: "host given twice") }
                host = try Self.checkedHost(value)
                continue
            case "port":
                guard port == nil else { throw Invalid(part: "query.port", reason: "port given twice") }
                port = try Self.port(Substring(value))
                continue
            default:
                try Self.check(parameter: name, value: value)
            }
            parameters.append(Parameter(name: name, value: value))
        }
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.parameters = parameters
    }

    /// The URL without its password, for logs and answers.
    public var description: String {
        var text = "postgresql://"
        if let user { text += Self.encode(user) + "@" }
        if let host {
            if host.hasPrefix("/") {
                text += Self.encode(host)
            } else {
                text += host.contains(":") ? "[\(host)]" : host
            }
        }
        if let port { text += ":\(port)" }
        if let database { text += "/" + Self.encode(database) }
        if !parameters.isEmpty {
            text += "?" + parameters.map { "\($0.name)=\(Self.encode($0.value))" }.joined(separator: "&")
        }
        return text
    }

    /// Whether the URL carries a password (to say so without showing it).
    public var hasPassword: Bool { password != nil }

    /// The URL with another database (tests create one per test on a shared server).
    public func with(database: String) -> PostgresURL {
        PostgresURL(user: user, host: host, port: port, database: database, parameters: parameters, password: password)
    }

    private init(user: String?, host: String?, port: Int?, database: String?, parameters: [Parameter], password: String?) {
        self.user = user
        self.host = host
        self.port = port
        self.database = database
        self.parameters = parameters
        self.password = password
    }

    /// libpq keywords and values for `PQconnectdbParams` (with `expand_dbname` off, so no value
    /// is parsed again as a connection string). `applicationName` applies unless the URL names one.
    func connectionKeywords(applicationName: String) -> [(String, String)] {
        var keywords: [(String, String)] = []
        if let host { keywords.append(("host", host)) }
        if let port { keywords.append(("port", String(port))) }
        if let user { keywords.append(("user", user)) }
        if let password { keywords.append(("password", password)) }
        if let database { keywords.append(("dbname", database)) }
        for parameter in parameters { keywords.append((parameter.name, parameter.value)) }
        if !parameters.contains(where: { $0.name == "application_name" }) {
            keywords.append(("application_name", String(applicationName.prefix(63))))
        }
        if !parameters.contains(where: { $0.name == "connect_timeout" }) {
            // A server that does not answer fails the connection instead of hanging it.
            keywords.append(("connect_timeout", "10"))
        }
        keywords.append(("client_encoding", "UTF8"))
        return keywords
    }

    // MARK: Parsing

    private static func port(_ text: Substring) throws(Invalid) -> Int {
        guard !text.isEmpty, text.count <= 5, text.allSatisfy(\.isASCII), let value = Int(text), (1...65535).contains(value) else {
            throw Invalid(part: "port", reason: "must be a number in 1...65535")
        }
        return value
    }

    private static func checkedHost(_ host: String) throws(Invalid) -> String {
        guard host.utf8.count <= 255 else { throw Invalid(part: "host", reason: "longer than 255 bytes") }
        if host.hasPrefix("/") { return host }
        guard host.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-.:_".unicodeScalars.contains($0)) })
        else {
            throw Invalid(part: "host", reason: "not a host name, an IP address or an absolute socket directory")
        }
        return host
    }

    private static func check(parameter name: String, value: String) throws(Invalid) {
        let part = "query.\(name)"
        guard value.utf8.count <= 1024 else { throw Invalid(part: part, reason: "longer than 1024 bytes") }
        func oneOf(_ values: [String]) throws(Invalid) {
            guard values.contains(value) else { throw Invalid(part: part, reason: "must be one of \(values.joined(separator: ", "))") }
        }
        func integer(_ range: ClosedRange<Int>) throws(Invalid) {
            guard value.count <= 10, let number = Int(value), range.contains(number) else {
                throw Invalid(part: part, reason: "must be an integer in \(range.lowerBound)...\(range.upperBound)")
            }
        }
        switch name {
        case "sslmode": try oneOf(["disable", "allow", "prefer", "require", "verify-ca", "verify-full"])
        case "gssencmode": try oneOf(["disable", "prefer", "require"])
        case "channel_binding": try oneOf(["disable", "prefer", "require"])
        case "target_session_attrs":
            try oneOf(["any", "read-write", "read-only", "primary", "standby", "prefer-standby"])
        case "keepalives": try oneOf(["0", "1"])
        case "connect_timeout": try integer(1...3600)
        case "keepalives_idle", "keepalives_interval", "keepalives_count": try integer(0...86_400)
        case "tcp_user_timeout": try integer(0...86_400_000)
        case "application_name":
            guard value.utf8.count <= 63 else { throw Invalid(part: part, reason: "longer than 63 bytes") }
        default: break
        }
    }

    /// Percent-decodes `text` to UTF-8 (`+` is literal, as libpq reads it).
    private static func decode(_ text: Substring, part: String) throws(Invalid) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    throw Invalid(part: part, reason: "bad percent-encoding")
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self), !decoded.utf8.contains(0) else {
            throw Invalid(part: part, reason: "not UTF-8, or contains NUL")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    private static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            let scalar = Unicode.Scalar(byte)
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "-._~".unicodeScalars.contains(scalar) {
                out.unicodeScalars.append(scalar)
            } else {
                out += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return out
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
