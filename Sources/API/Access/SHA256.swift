import CCrypto

/// SHA-256 from OpenSSL's libcrypto (already loaded through libcurl), so API keys are held only
/// as digests and ETags are content hashes. Only ever fed configured keys, presented tokens and
/// bodies the caller has bounded; not a general-purpose hashing API.
enum SHA256 {
    static let digestSize = 32

    static func hash<Bytes: Collection<UInt8>>(_ message: Bytes) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: digestSize)
        var length: UInt32 = 0
        let hashed: Int32 = message.withContiguousStorageIfAvailable { bytes in
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_sha256(), nil)
        } ?? Array(message).withUnsafeBufferPointer { bytes in
            EVP_Digest(bytes.baseAddress, bytes.count, &digest, &length, EVP_sha256(), nil)
        }
        // EVP_Digest fails only when libcrypto cannot allocate its context: nothing to recover.
        precondition(hashed == 1 && length == UInt32(digestSize), "libcrypto could not compute SHA-256")
        return digest
    }

    /// Compares two digests in time independent of where they differ.
    static func constantTimeEquals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        return left.withUnsafeBytes { l in right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, left.count) == 0 } }
    }
}
