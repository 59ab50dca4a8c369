import CCrypto

/// Ed25519 signatures (RFC 8032) from libcrypto: signed update manifests. A private key is its
/// 32-byte seed; a public key its 32 raw bytes (the JWK `x`); a signature 64 bytes.
public enum Ed25519 {
    public static let keyByteCount = 32
    public static let signatureByteCount = 64

    /// A signing key. Its `description` and reflection never show the seed.
    public final class PrivateKey: @unchecked Sendable, CustomStringConvertible, CustomReflectable {
        // An EVP_PKEY is immutable once made and libcrypto allows concurrent signing with it
        // (each signature gets its own EVP_MD_CTX), hence @unchecked Sendable.
        fileprivate let key: OpaquePointer
        public let publicKey: PublicKey

        /// A new key from libcrypto's CSPRNG.
        public convenience init() throws(CryptographyError) {
            try self.init(seed: SecureRandom.bytes(count: Ed25519.keyByteCount))
        }

        /// The key whose RFC 8032 secret (seed) is `seed`.
        public init(seed: [UInt8]) throws(CryptographyError) {
            guard seed.count == Ed25519.keyByteCount else {
                throw .invalidKeyLength(algorithm: "Ed25519", expected: Ed25519.keyByteCount, actual: seed.count)
            }
            guard let key = seed.withUnsafeBufferPointer({ EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }) else {
                throw .libcrypto(operation: "EVP_PKEY_new_raw_private_key(Ed25519)")
            }
            var raw = [UInt8](repeating: 0, count: Ed25519.keyByteCount)
            var length = raw.count
            guard EVP_PKEY_get_raw_public_key(key, &raw, &length) == 1, length == Ed25519.keyByteCount else {
                EVP_PKEY_free(key)
                throw .libcrypto(operation: "EVP_PKEY_get_raw_public_key(Ed25519)")
            }
            self.key = key
            self.publicKey = try PublicKey(rawRepresentation: raw)
        }

        deinit { EVP_PKEY_free(key) }

        /// The 32-byte seed, for storing the key encrypted (`SecretEnvelope`). Never log it.
        public func seed() throws(CryptographyError) -> [UInt8] {
            var raw = [UInt8](repeating: 0, count: Ed25519.keyByteCount)
            var length = raw.count
            guard EVP_PKEY_get_raw_private_key(key, &raw, &length) == 1, length == Ed25519.keyByteCount else {
                throw .libcrypto(operation: "EVP_PKEY_get_raw_private_key(Ed25519)")
            }
            return raw
        }

        /// The 64-byte signature of `message` (pure Ed25519: the message itself, not a digest).
        public func signature(for message: some Collection<UInt8>) throws(CryptographyError) -> [UInt8] {
            guard let context = EVP_MD_CTX_new() else { throw .libcrypto(operation: "EVP_MD_CTX_new") }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestSignInit(context, nil, nil, nil, key) == 1 else {
                throw .libcrypto(operation: "EVP_DigestSignInit(Ed25519)")
            }
            var signature = [UInt8](repeating: 0, count: Ed25519.signatureByteCount)
            var length = signature.count
            let message = Array(message)
            let signed = message.withUnsafeBufferPointer { EVP_DigestSign(context, &signature, &length, $0.baseAddress, $0.count) }
            guard signed == 1, length == Ed25519.signatureByteCount else { throw .libcrypto(operation: "EVP_DigestSign(Ed25519)") }
            return signature
        }

        public var description: String { "Ed25519.PrivateKey(public: \(publicKey.hexPrefix)…)" }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .class) }
    }

    /// A verifying key.
    public final class PublicKey: @unchecked Sendable, Equatable, CustomStringConvertible {
        fileprivate let key: OpaquePointer
        /// The 32 raw bytes (RFC 8032's encoding; JWK `x`).
        public let rawRepresentation: [UInt8]

        public init(rawRepresentation raw: [UInt8]) throws(CryptographyError) {
            guard raw.count == Ed25519.keyByteCount else {
                throw .invalidKeyLength(algorithm: "Ed25519 public", expected: Ed25519.keyByteCount, actual: raw.count)
            }
            guard let key = raw.withUnsafeBufferPointer({ EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, nil, $0.baseAddress, $0.count) }) else {
                throw .libcrypto(operation: "EVP_PKEY_new_raw_public_key(Ed25519)")
            }
            self.key = key
            self.rawRepresentation = raw
        }

        deinit { EVP_PKEY_free(key) }

        /// Whether `signature` is this key's signature of `message`. Malformed signatures (a wrong
        /// length) are simply not valid.
        public func isValidSignature(_ signature: some Collection<UInt8>, for message: some Collection<UInt8>) -> Bool {
            let signature = Array(signature), message = Array(message)
            guard signature.count == Ed25519.signatureByteCount, let context = EVP_MD_CTX_new() else { return false }
            defer { EVP_MD_CTX_free(context) }
            guard EVP_DigestVerifyInit(context, nil, nil, nil, key) == 1 else { return false }
            return signature.withUnsafeBufferPointer { sig in
                message.withUnsafeBufferPointer { EVP_DigestVerify(context, sig.baseAddress, sig.count, $0.baseAddress, $0.count) == 1 }
            }
        }

        public static func == (left: PublicKey, right: PublicKey) -> Bool { left.rawRepresentation == right.rawRepresentation }

        fileprivate var hexPrefix: String {
            rawRepresentation.prefix(4).map { String($0, radix: 16).leftPadded(to: 2) }.joined()
        }

        public var description: String { "Ed25519.PublicKey(\(hexPrefix)…)" }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
