import CCurl

/// Scheme, host and port of a URL as curl itself parses it — the same parser that will connect,
/// so the host packd limits, pauses and checks is the host curl talks to.
struct WireTarget: Equatable {
    static let maxURLBytes = 8192

    let scheme: String
    let host: String
    let port: Int
    /// `scheme://host:port`: the unit of per-host limits, rate and pauses.
    var hostKey: String { "\(scheme)://\(host):\(port)" }

    init(_ url: String) throws(FetchError) {
        guard url.utf8.count <= Self.maxURLBytes, !url.utf8.contains(where: { $0 < 0x21 || $0 == 0x7f }) else {
            throw .invalidURL
        }
        guard let handle = curl_url() else { throw .invalidURL }
        defer { curl_url_cleanup(handle) }
        guard curl_url_set(handle, CURLUPART_URL, url, 0) == CURLUE_OK else { throw .invalidURL }
        func part(_ which: CURLUPart, _ flags: UInt32 = 0) -> String? {
            var value: UnsafeMutablePointer<CChar>?
            guard curl_url_get(handle, which, &value, flags) == CURLUE_OK, let value else { return nil }
            defer { curl_free(value) }
            return String(cString: value)
        }
        guard let scheme = part(CURLUPART_SCHEME)?.lowercased() else { throw .invalidURL }
        guard scheme == "http" || scheme == "https" else { throw .unsupportedScheme }
        guard let host = part(CURLUPART_HOST)?.lowercased(), !host.isEmpty,
              let portText = part(CURLUPART_PORT, UInt32(CURLU_DEFAULT_PORT)), let port = Int(portText) else {
            throw .invalidURL
        }
        self.scheme = scheme
        self.host = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        self.port = port
    }
}

extension FetchRequest {
    static let maxHeaders = 32
    static let maxHeaderBytes = 8192

    /// Rejects what would corrupt the request on the wire (header injection) or is unbounded.
    func validate() throws(FetchError) {
        guard maxBodyBytes > 0, headers.count <= Self.maxHeaders else { throw .invalidHeader }
        for (name, value) in headers {
            guard !name.isEmpty, name.utf8.count <= 256, name.utf8.allSatisfy(Self.isTokenByte),
                  Self.isSafeValue(value) else { throw .invalidHeader }
        }
        if let etag = ifNoneMatch, !Self.isSafeValue(etag) { throw .invalidHeader }
        if let etag = range?.ifMatch, !Self.isSafeValue(etag) { throw .invalidHeader }
    }

    private static func isSafeValue(_ value: String) -> Bool {
        value.utf8.count <= maxHeaderBytes && !value.utf8.contains { $0 == 0 || $0 == 0x0a || $0 == 0x0d }
    }

    /// Whether `name` can be a request header's name (an RFC 9110 token of at most 256 bytes);
    /// configuration that supplies header names checks them with the same rule as requests.
    public static func isValidHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.count <= 256 && name.utf8.allSatisfy(isTokenByte)
    }

    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
