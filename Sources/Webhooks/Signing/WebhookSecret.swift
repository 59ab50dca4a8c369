import Cryptography
import Foundation

/// A signing secret as the Standard Webhooks specification writes it: `whsec_` and the base64
/// of the key. packd makes 32 random bytes (the specification asks for 24 to 64).
public struct WebhookSecret: Sendable, Equatable {
    public static let prefix = "whsec_"
    public static let generatedBytes = 32

    /// The HMAC key.
    public let key: [UInt8]

    /// Parses `whsec_<base64>` (or the bare base64, as the reference libraries accept).
    public init?(_ text: String) {
        let encoded = text.hasPrefix(Self.prefix) ? String(text.dropFirst(Self.prefix.count)) : text
        guard let key = Data(base64Encoded: encoded), !key.isEmpty else { return nil }
        self.key = Array(key)
    }

    public init(key: [UInt8]) {
        self.key = key
    }

    /// A new secret from OpenSSL's CSPRNG.
    public static func generate() -> WebhookSecret {
        // The generator fails only when it cannot be seeded: nothing to sign with then.
        guard let key = try? SecureRandom.bytes(count: generatedBytes) else { preconditionFailure("libcrypto could not produce random bytes") }
        return WebhookSecret(key: key)
    }

    /// `whsec_<base64>`.
    public var text: String { Self.prefix + Data(key).base64EncodedString() }
}
