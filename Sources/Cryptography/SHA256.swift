import CCrypto

/// SHA-256 (FIPS 180-4) from OpenSSL's libcrypto — the one implementation in packd: API key
/// digests, ETags, artifact digests, idempotency hashes and token cache keys all come here.
public enum SHA256 {
    public static let byteCount = 32

    /// The digest of `message`.
    public static func hash<Bytes: Collection<UInt8>>(_ message: Bytes) -> [UInt8] {
        message.withContiguousStorageIfAvailable { hash(UnsafeRawBufferPointer($0)) }
            ?? Array(message).withUnsafeBytes { hash($0) }
    }

    /// The digest of the bytes at `message`.
    public static func hash(_ message: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: byteCount)
        var length: UInt32 = 0
        let hashed = EVP_Digest(message.baseAddress, message.count, &digest, &length, EVP_sha256(), nil)
        // EVP_Digest fails only when libcrypto cannot allocate its context: nothing to recover.
        precondition(hashed == 1 && length == UInt32(byteCount), "libcrypto could not compute SHA-256")
        return digest
    }

    /// A digest computed over several pieces (a file read block by block): memory stays flat
    /// whatever the length. One owner at a time; `finalize` ends it.
    public final class Hasher {
        private let context: OpaquePointer
        private var finished = false

        public init() throws(CryptographyError) {
            guard let context = EVP_MD_CTX_new() else { throw .libcrypto(operation: "EVP_MD_CTX_new") }
            guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else {
                EVP_MD_CTX_free(context)
                throw .libcrypto(operation: "EVP_DigestInit_ex(SHA-256)")
            }
            self.context = context
        }

        deinit { EVP_MD_CTX_free(context) }

        public func update(_ bytes: UnsafeRawBufferPointer) throws(CryptographyError) {
            precondition(!finished, "SHA256.Hasher updated after finalize")
            guard EVP_DigestUpdate(context, bytes.baseAddress, bytes.count) == 1 else {
                throw .libcrypto(operation: "EVP_DigestUpdate(SHA-256)")
            }
        }

        public func update(_ bytes: [UInt8]) throws(CryptographyError) {
            precondition(!finished, "SHA256.Hasher updated after finalize")
            let updated = bytes.withUnsafeBytes { EVP_DigestUpdate(context, $0.baseAddress, $0.count) }
            guard updated == 1 else { throw .libcrypto(operation: "EVP_DigestUpdate(SHA-256)") }
        }

        /// The digest of everything passed to `update`.
        public func finalize() throws(CryptographyError) -> [UInt8] {
            precondition(!finished, "SHA256.Hasher finalized twice")
            finished = true
            var digest = [UInt8](repeating: 0, count: byteCount)
            var length: UInt32 = 0
            guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == UInt32(byteCount) else {
                throw .libcrypto(operation: "EVP_DigestFinal_ex(SHA-256)")
            }
            return digest
        }
    }
}
