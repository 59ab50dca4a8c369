import Cryptography
import Packs

/// Signed URLs that let a device download one pack's files with no key: HMAC-SHA256 under the
/// tenant's link secret over a canonical string, carried in two query parameters (`expires`,
/// `sig`) that a CDN can leave out of its cache key, so one cached copy serves every device.
///
/// The string signed is four lines joined by a line feed (0x0A), with no line feed at the end:
///
///     packd-link-v1
///     GET
///     /v1/packs/42/versions/3/export
///     expires=1767225600&format=pmtiles&since=2
///
/// 1. the scheme's name and version, `packd-link-v1`;
/// 2. the method, `GET` (a `HEAD` request is checked as the `GET` it stands for);
/// 3. the path exactly as sent, without the query;
/// 4. the signed query parameters present in the URL — of `expires`, `format`, `since`, in that
///    (alphabetical) order — each as `name=value` exactly as in the URL, joined by `&`. `expires`
///    (Unix seconds) is always there.
///
/// `sig` is the unpadded base64url (RFC 4648 §5) of the 32-byte HMAC-SHA256 of that string under
/// the tenant's 32-byte link secret. `from` (which version the device holds) and the `Range`
/// header are not signed: a device chooses them. Any other query parameter makes the link
/// malformed, so a parameter that selects content can never ride along unsigned. Values and paths
/// are restricted to RFC 3986 unreserved characters (and `/` in the path), so no percent-encoding
/// can make two texts of one URL.
///
/// An edge verifies without packd: rebuild the string from the request, compute the HMAC with the
/// tenant's link secret, compare with `sig` in constant time, then check `expires` against the clock.
/// Rotating the tenant's link secret revokes every link it signed.
public struct DeviceLinkSigner: Sendable, CustomStringConvertible, CustomReflectable {
    public static let scheme = "packd-link-v1"
    public static let secretByteCount = 32
    /// The query parameters that select content, signed when present (with `expires`).
    public static let signedParameters = ["expires", "format", "since"]
    /// Query parameters a link may carry unsigned.
    public static let unsignedParameters = ["from", "sig"]
    /// The longest path and parameter value a link accepts.
    public static let maximumPathLength = 1024
    public static let maximumValueLength = 64

    private let secret: [UInt8]

    public init(secret: [UInt8]) throws(CryptographyError) {
        guard secret.count == Self.secretByteCount else {
            throw .invalidKeyLength(algorithm: "device-link HMAC-SHA256", expected: Self.secretByteCount, actual: secret.count)
        }
        self.secret = secret
    }

    /// A new tenant link secret.
    public static func generateSecret() throws(CryptographyError) -> [UInt8] {
        try SecureRandom.bytes(count: secretByteCount)
    }

    /// The string signed for a `GET` of `path` with the signed parameters `signed` (name → value).
    public static func canonicalString(method: String, path: String, signed: [String: String]) -> String {
        let query = signedParameters.compactMap { name in signed[name].map { "\(name)=\($0)" } }.joined(separator: "&")
        return [scheme, method == "HEAD" ? "GET" : method, path, query].joined(separator: "\n")
    }

    /// The query string (`expires=…&format=…&since=…&sig=…`) that makes `path` a link valid until
    /// `expires`. `parameters` may hold `format` and `since`.
    public func signedQuery(path: String, parameters: [String: String] = [:], expires: Int64) throws(DeviceLinkError) -> String {
        guard Self.isPath(path) else { throw .path }
        var signed = parameters
        signed["expires"] = String(expires)
        for (name, value) in signed {
            guard Self.signedParameters.contains(name) else { throw .unexpectedParameter(name) }
            guard Self.isValue(value) else { throw .value(name) }
        }
        let query = Self.signedParameters.compactMap { name in signed[name].map { "\(name)=\($0)" } }.joined(separator: "&")
        return query + "&sig=" + signature(method: "GET", path: path, signed: signed)
    }

    /// `path?query` for `signedQuery`.
    public func signedURL(path: String, parameters: [String: String] = [:], expires: Int64) throws(DeviceLinkError) -> String {
        path + "?" + (try signedQuery(path: path, parameters: parameters, expires: expires))
    }

    /// Checks a request for `path` with the raw query string `query` (what follows `?`, not
    /// decoded) at `now` (Unix seconds). A link is valid through its `expires` second.
    public func verify(method: String, path: String, query: String, now: Int64) -> DeviceLinkVerdict {
        guard method == "GET" || method == "HEAD" else { return .malformed("a device link is for GET and HEAD only") }
        guard Self.isPath(path) else { return .malformed("the path holds characters a link cannot sign") }
        var signed: [String: String] = [:]
        var presented: String?
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "=") else { return .malformed("a query parameter without a value") }
            let name = String(pair[..<equals]), value = String(pair[pair.index(after: equals)...])
            guard Self.signedParameters.contains(name) || Self.unsignedParameters.contains(name) else {
                return .malformed("the query parameter '\(name.prefix(32))' is not part of a device link")
            }
            if name == "sig" {
                guard presented == nil else { return .malformed("'sig' is given twice") }
                presented = value
            } else if name != "from" {
                guard signed[name] == nil else { return .malformed("'\(name)' is given twice") }
                guard Self.isValue(value) else { return .malformed("'\(name)' holds characters a link cannot sign") }
                signed[name] = value
            }
        }
        guard let presented, let presentedBytes = Base64URL.decode(presented) else { return .malformed("the link has no valid 'sig'") }
        guard let expiresText = signed["expires"], let expires = Int64(expiresText), expires >= 0,
              expiresText.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
            return .malformed("the link has no valid 'expires'")
        }
        let expected = HMACSHA256.authenticationCode(for: Array(Self.canonicalString(method: method, path: path, signed: signed).utf8), key: secret)
        // The signature is checked before the expiry, so `expired` is only ever said of a genuine link.
        guard ConstantTime.equals(expected, presentedBytes) else { return .badSignature }
        guard now <= expires else { return .expired(at: expires) }
        return .valid(expires: expires)
    }

    public var description: String { "DeviceLinkSigner(secret redacted)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    private func signature(method: String, path: String, signed: [String: String]) -> String {
        Base64URL.encode(HMACSHA256.authenticationCode(for: Array(Self.canonicalString(method: method, path: path, signed: signed).utf8), key: secret))
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        Base62.isDigit(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    static func isPath(_ path: String) -> Bool {
        let bytes = path.utf8
        return bytes.first == UInt8(ascii: "/") && bytes.count <= maximumPathLength
            && bytes.allSatisfy { isUnreserved($0) || $0 == UInt8(ascii: "/") }
    }

    static func isValue(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= maximumValueLength && value.utf8.allSatisfy(isUnreserved)
    }
}

extension Principal {
    /// The caller a valid device link of `pack` makes: a reader of that one pack, no key at all,
    /// its bucket named by a digest of the link's signature (the signature itself is the link's
    /// credential, kept out of memory's names, logs and metrics).
    public static func deviceLink(tenant: TenantID, pack: PackID, signature: some StringProtocol) -> Principal {
        let bucket = "link:\(pack):" + Base64URL.encode(SHA256.hash(signature.utf8).prefix(12))
        return Principal(tenant: tenant, role: .read, actor: .deviceLink(pack: pack), packs: [pack], rateLimitKey: bucket)
    }
}

/// What checking a device link found.
public enum DeviceLinkVerdict: Equatable, Sendable {
    /// Signed by the tenant's secret and not expired: serve it.
    case valid(expires: Int64)
    /// Signed by the tenant's secret, but its `expires` has passed.
    case expired(at: Int64)
    /// Well-formed, but not signed by this secret (altered, another pack's, or signed before the
    /// secret rotated).
    case badSignature
    /// Not a device link: a parameter missing, repeated, unknown or with characters no link holds.
    case malformed(String)
}

/// Why a link could not be made (a programming error in the caller, named precisely).
public enum DeviceLinkError: Error, Equatable, Sendable, CustomStringConvertible {
    case path
    case unexpectedParameter(String)
    case value(String)

    public var description: String {
        switch self {
        case .path: "a device link's path must start with '/' and hold only unreserved characters and '/'"
        case .unexpectedParameter(let name): "'\(name)' is not a parameter a device link signs"
        case .value(let name): "the value of '\(name)' must be 1 to \(DeviceLinkSigner.maximumValueLength) unreserved characters"
        }
    }
}
