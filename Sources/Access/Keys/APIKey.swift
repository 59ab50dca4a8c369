import CZlib
import Cryptography

/// The text of an API key made through the API: `packd_`, 32 random base62 characters (the
/// secret: 32 × log2(62) ≈ 190.5 bits from libcrypto's CSPRNG), and 6 base62 characters of the
/// CRC-32 of everything before them — 44 characters, like GitHub's `ghp_…` tokens. Nothing in it
/// names a tenant or a role: those live in the key's record.
///
/// The prefix and the checksum are for secret scanners: `packd_[0-9A-Za-z]{38}` finds a leaked
/// key in a commit or a log, and the checksum tells a real key from a string that only looks like
/// one without asking packd. A mistyped key fails the checksum before any lookup.
///
/// A key is stored only as the SHA-256 of its text. A fast hash suffices — unlike passwords, which
/// need a deliberately slow, salted hash (bcrypt, Argon2) because people choose them from a small
/// space an attacker can enumerate: a 190-bit random secret cannot be enumerated at any hashing
/// speed (2^190 SHA-256 evaluations), so a stolen table of digests gives no key, and no salt is
/// needed since there is nothing to precompute. A fast hash keeps each request's check at about a
/// microsecond and lets the store look a key up by its digest (an index), then compare in constant
/// time.
public struct APIKey: Sendable, CustomStringConvertible, CustomReflectable {
    public static let prefix = "packd_"
    public static let secretLength = 32
    public static let checksumLength = 6
    public static let length = prefix.utf8.count + secretLength + checksumLength

    /// The whole key, as the client sends it. Shown once, at creation.
    public let text: String

    /// Why a text is not a packd API key; never repeats the text.
    public enum FormatError: Error, Equatable, Sendable, CustomStringConvertible {
        case prefix
        case length(Int)
        case character
        case checksum

        public var description: String {
            switch self {
            case .prefix: "an API key starts with '\(APIKey.prefix)'"
            case .length(let count): "an API key is \(APIKey.length) characters, not \(count)"
            case .character: "an API key holds only the letters A-Z, a-z and digits after its prefix"
            case .checksum: "the API key's checksum does not match (mistyped or truncated)"
            }
        }
    }

    /// A new key from libcrypto's CSPRNG.
    public static func generate() throws(CryptographyError) -> APIKey {
        try generate(random: SecureRandom.bytes(count:))
    }

    static func generate(random: (Int) throws(CryptographyError) -> [UInt8]) throws(CryptographyError) -> APIKey {
        let body = Array(prefix.utf8) + (try Base62.randomDigits(count: secretLength, random: random))
        return APIKey(validated: String(decoding: body + checksum(of: body), as: UTF8.self))
    }

    /// Checks the form of `text` (prefix, length, alphabet, checksum): whether it can be a key,
    /// not whether it is one — that is the store's lookup of `digest`.
    public init(parsing text: some StringProtocol) throws(FormatError) {
        let bytes = Array(text.utf8)
        let prefix = Array(Self.prefix.utf8)
        guard bytes.starts(with: prefix) else { throw .prefix }
        guard bytes.count == Self.length else { throw .length(bytes.count) }
        guard bytes[prefix.count...].allSatisfy(Base62.isDigit) else { throw .character }
        let body = bytes[..<(Self.length - Self.checksumLength)]
        // Compared as text: both sides are public (the checksum protects against typos, not attackers).
        guard Self.checksum(of: body) == Array(bytes[(Self.length - Self.checksumLength)...]) else { throw .checksum }
        self.text = String(text)
    }

    private init(validated text: String) {
        self.text = text
    }

    /// SHA-256 of the key's text: what the store keeps and looks keys up by.
    public var digest: [UInt8] { SHA256.hash(text.utf8) }

    /// Whether `storedDigest` is this key's, in constant time.
    public func matches(digest storedDigest: [UInt8]) -> Bool {
        ConstantTime.equals(digest, storedDigest)
    }

    /// Never the secret: a key that reaches a log line or a problem body shows only its kind.
    public var description: String { "APIKey(\(Self.prefix)…)" }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The CRC-32 (zlib's, as GitHub's tokens use) of `body` in 6 base62 digits.
    static func checksum(of body: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(body)
        let crc = bytes.withUnsafeBufferPointer { crc32(0, $0.baseAddress, UInt32($0.count)) }
        return Base62.encode(UInt64(crc), width: checksumLength)
    }
}
