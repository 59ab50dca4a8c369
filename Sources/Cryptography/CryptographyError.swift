/// Why a cryptographic operation did not produce its result. Every case names the operation and
/// what was wrong with its input's *shape* (a length, a format) — never a key, a secret, a
/// plaintext or a tag: these values end up in logs and problem bodies.
public enum CryptographyError: Error, Equatable, Sendable, CustomStringConvertible {
    /// libcrypto refused or failed inside `operation` (an allocation, a context it could not set
    /// up): nothing the caller passed was at fault.
    case libcrypto(operation: String)
    /// A key of the wrong size: `expected` bytes for `algorithm`, `actual` given.
    case invalidKeyLength(algorithm: String, expected: Int, actual: Int)
    /// A nonce, tag or signature of the wrong size.
    case invalidLength(of: String, expected: Int, actual: Int)
    /// An input longer than `limit` bytes.
    case tooLong(of: String, limit: Int)
    /// An AES-GCM box whose tag does not match its key, nonce, ciphertext and associated data:
    /// the wrong key, or altered bytes. Deliberately says no more.
    case authenticationFailed
    /// The random number generator could not produce bytes (not seeded).
    case randomUnavailable

    public var description: String {
        switch self {
        case .libcrypto(let operation):
            "libcrypto failed in \(operation)"
        case .invalidKeyLength(let algorithm, let expected, let actual):
            "a \(algorithm) key must be \(expected) bytes, not \(actual)"
        case .invalidLength(let what, let expected, let actual):
            "\(what) must be \(expected) bytes, not \(actual)"
        case .tooLong(let what, let limit):
            "\(what) must be at most \(limit) bytes"
        case .authenticationFailed:
            "the sealed value does not authenticate (wrong key, or altered bytes)"
        case .randomUnavailable:
            "libcrypto's random generator could not produce bytes"
        }
    }
}
