/// Keeps credentials out of access logs: request targets are logged with the value of every
/// `access_token` query parameter replaced, however it is spelled or encoded.
public enum AccessLogRedaction {
    public static let placeholder = "REDACTED"

    /// `target` (path and query, as received) with `access_token` values replaced.
    public static func redact(_ target: String) -> String {
        guard let mark = target.firstIndex(of: "?") else { return target }
        let query = target[target.index(after: mark)...]
        let pairs = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            guard isAccessToken(name) else { return String(pair) }
            return "\(name)=\(placeholder)"
        }
        return target[...mark] + pairs.joined(separator: "&")
    }

    /// Compares the name percent-decoded and case-insensitively, so `access%5Ftoken` or
    /// `ACCESS_TOKEN` cannot slip a key into the log. Undecodable names are redacted too.
    private static func isAccessToken(_ name: Substring) -> Bool {
        var decoded: [UInt8] = []
        var iterator = name.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next(), let low = iterator.next(),
                      let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16) else { return true }
                decoded.append(value)
            } else if byte == UInt8(ascii: "+") {
                decoded.append(0x20)
            } else {
                decoded.append(byte)
            }
        }
        return String(decoding: decoded, as: UTF8.self).lowercased() == "access_token"
    }
}
