/// Hands out the `X-Request-Id` of each request: the client's own when it is a plausible
/// identifier (a proxy's or a client library's, so its report and the server log meet), else one
/// made here. The id is echoed on the response and logged with the access line. Loop thread only.
///
/// A client's value is untrusted: it goes into a response header and every log line, so only
/// 1 to `maximumLength` characters of `[A-Za-z0-9._~:+/=@-]` are taken; anything else (spaces,
/// quotes, control characters, too long) is replaced by a made-up id, never echoed.
struct RequestIDs {
    static let headerName = "X-Request-Id"
    static let maximumLength = 128

    /// Random per server start, so ids of different processes (and restarts) do not collide.
    private let prefix: String
    private var counter: UInt64 = 0

    init() {
        let hex = String(UInt64.random(in: .min ... .max), radix: 16)
        prefix = String(repeating: "0", count: 16 - hex.count) + hex + "-"
    }

    /// The id of a request that sent `offered` (nil: no such header).
    mutating func id(offered: String?) -> String {
        if let offered, Self.isAcceptable(offered) { return offered }
        counter &+= 1
        var id = prefix
        id.append(String(counter))
        return id
    }

    static func isAcceptable(_ value: String) -> Bool {
        let bytes = value.utf8
        guard !bytes.isEmpty, bytes.count <= maximumLength else { return false }
        return bytes.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"), UInt8(ascii: ":"),
                 UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "@"):
                true
            default:
                false
            }
        }
    }
}
