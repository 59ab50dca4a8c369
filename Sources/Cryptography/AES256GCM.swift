import CCrypto

/// AES-256-GCM (NIST SP 800-38D) from libcrypto with 96-bit random nonces and 128-bit tags:
/// secrets at rest (webhook, link and upstream secrets, signing keys).
///
/// A random 96-bit nonce per message keeps the chance of a repeat under 2⁻³² for up to 2³²
/// messages under one key (SP 800-38D §8.3) — far more secrets than packd will ever store
/// between key rotations.
public enum AES256GCM {
    public static let keyByteCount = 32
    public static let nonceByteCount = 12
    public static let tagByteCount = 16
    /// Secrets are small; the bound keeps every length within libcrypto's `int` arguments.
    public static let maximumMessageLength = 1 << 30

    /// A 256-bit key. Its `description` and reflection never show the bytes.
    public struct Key: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        let bytes: [UInt8]

        public init(bytes: [UInt8]) throws(CryptographyError) {
            guard bytes.count == AES256GCM.keyByteCount else {
                throw .invalidKeyLength(algorithm: "AES-256-GCM", expected: AES256GCM.keyByteCount, actual: bytes.count)
            }
            self.bytes = bytes
        }

        /// A new key from libcrypto's CSPRNG.
        public static func generate() throws(CryptographyError) -> Key {
            try Key(bytes: SecureRandom.bytes(count: AES256GCM.keyByteCount))
        }

        public static func == (left: Key, right: Key) -> Bool { ConstantTime.equals(left.bytes, right.bytes) }
        public var description: String { "AES256GCM.Key(redacted)" }
        public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }
    }

    /// What `seal` produces: the nonce, the ciphertext (as long as the plaintext) and the tag.
    public struct SealedBox: Sendable, Equatable {
        public let nonce: [UInt8]
        public let ciphertext: [UInt8]
        public let tag: [UInt8]

        public init(nonce: [UInt8], ciphertext: [UInt8], tag: [UInt8]) throws(CryptographyError) {
            guard nonce.count == AES256GCM.nonceByteCount else {
                throw .invalidLength(of: "an AES-GCM nonce", expected: AES256GCM.nonceByteCount, actual: nonce.count)
            }
            guard tag.count == AES256GCM.tagByteCount else {
                throw .invalidLength(of: "an AES-GCM tag", expected: AES256GCM.tagByteCount, actual: tag.count)
            }
            self.nonce = nonce
            self.ciphertext = ciphertext
            self.tag = tag
        }
    }

    /// Encrypts and authenticates `plaintext`, and authenticates `associatedData` (not encrypted:
    /// what the value belongs to, so a sealed value cannot be moved to another row), under a
    /// fresh random nonce.
    public static func seal(_ plaintext: [UInt8], using key: Key, associatedData: [UInt8] = []) throws(CryptographyError) -> SealedBox {
        try seal(plaintext, using: key, nonce: SecureRandom.bytes(count: nonceByteCount), associatedData: associatedData)
    }

    /// `seal` with a given nonce: for known-answer tests only — a nonce must never repeat under a key.
    static func seal(_ plaintext: [UInt8], using key: Key, nonce: [UInt8], associatedData: [UInt8]) throws(CryptographyError) -> SealedBox {
        let context = try CipherContext(key: key, nonce: nonce, encrypting: true)
        try context.authenticate(associatedData)
        let ciphertext = try context.update(plaintext)
        try context.finish()
        var tag = [UInt8](repeating: 0, count: tagByteCount)
        guard EVP_CIPHER_CTX_ctrl(context.raw, EVP_CTRL_GCM_GET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw .libcrypto(operation: "EVP_CTRL_GCM_GET_TAG")
        }
        return try SealedBox(nonce: nonce, ciphertext: ciphertext, tag: tag)
    }

    /// The plaintext of `box`, or `.authenticationFailed` when the key, the associated data or any
    /// byte of the box is not what sealed it.
    public static func open(_ box: SealedBox, using key: Key, associatedData: [UInt8] = []) throws(CryptographyError) -> [UInt8] {
        let context = try CipherContext(key: key, nonce: box.nonce, encrypting: false)
        try context.authenticate(associatedData)
        let plaintext = try context.update(box.ciphertext)
        var tag = box.tag
        guard EVP_CIPHER_CTX_ctrl(context.raw, EVP_CTRL_GCM_SET_TAG, Int32(tagByteCount), &tag) == 1 else {
            throw .libcrypto(operation: "EVP_CTRL_GCM_SET_TAG")
        }
        do {
            try context.finish()
        } catch {
            throw .authenticationFailed
        }
        return plaintext
    }

    /// One EVP_CIPHER_CTX set up for AES-256-GCM with a 96-bit nonce, freed with the value.
    private final class CipherContext {
        let raw: OpaquePointer

        init(key: Key, nonce: [UInt8], encrypting: Bool) throws(CryptographyError) {
            guard nonce.count == AES256GCM.nonceByteCount else {
                throw .invalidLength(of: "an AES-GCM nonce", expected: AES256GCM.nonceByteCount, actual: nonce.count)
            }
            guard let raw = EVP_CIPHER_CTX_new() else { throw .libcrypto(operation: "EVP_CIPHER_CTX_new") }
            self.raw = raw
            let direction: Int32 = encrypting ? 1 : 0
            guard EVP_CipherInit_ex(raw, EVP_aes_256_gcm(), nil, nil, nil, direction) == 1,
                  EVP_CIPHER_CTX_ctrl(raw, EVP_CTRL_GCM_SET_IVLEN, Int32(AES256GCM.nonceByteCount), nil) == 1 else {
                throw .libcrypto(operation: "EVP_CipherInit_ex(AES-256-GCM)")
            }
            let keyed = key.bytes.withUnsafeBufferPointer { k in
                nonce.withUnsafeBufferPointer { n in EVP_CipherInit_ex(raw, nil, nil, k.baseAddress, n.baseAddress, direction) }
            }
            guard keyed == 1 else { throw .libcrypto(operation: "EVP_CipherInit_ex(key, nonce)") }
        }

        deinit { EVP_CIPHER_CTX_free(raw) }

        func authenticate(_ associatedData: [UInt8]) throws(CryptographyError) {
            guard !associatedData.isEmpty else { return }
            var length: Int32 = 0
            let done = associatedData.withUnsafeBufferPointer { EVP_CipherUpdate(raw, nil, &length, $0.baseAddress, Int32($0.count)) }
            guard done == 1 else { throw .libcrypto(operation: "EVP_CipherUpdate(associated data)") }
        }

        func update(_ input: [UInt8]) throws(CryptographyError) -> [UInt8] {
            guard !input.isEmpty else { return [] }
            guard input.count <= AES256GCM.maximumMessageLength else { throw .tooLong(of: "an AES-GCM message", limit: AES256GCM.maximumMessageLength) }
            var output = [UInt8](repeating: 0, count: input.count + 16)
            var length: Int32 = 0
            let done = input.withUnsafeBufferPointer { EVP_CipherUpdate(raw, &output, &length, $0.baseAddress, Int32($0.count)) }
            guard done == 1 else { throw .libcrypto(operation: "EVP_CipherUpdate") }
            return Array(output.prefix(Int(length)))
        }

        /// For decryption: fails when the tag does not verify.
        func finish() throws(CryptographyError) {
            var tail = [UInt8](repeating: 0, count: 16)
            var length: Int32 = 0
            guard EVP_CipherFinal_ex(raw, &tail, &length) == 1 else { throw .libcrypto(operation: "EVP_CipherFinal_ex") }
        }
    }
}
