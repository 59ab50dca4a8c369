import CCrypto

/// Bytes from libcrypto's CSPRNG (`RAND_bytes`): key secrets, nonces, signing keys.
public enum SecureRandom {
    public static func bytes(count: Int) throws(CryptographyError) -> [UInt8] {
        precondition(count >= 0 && count <= 1 << 20, "SecureRandom.bytes: count out of range")
        var bytes = [UInt8](repeating: 0, count: count)
        guard count > 0 else { return bytes }
        guard RAND_bytes(&bytes, Int32(count)) == 1 else { throw .randomUnavailable }
        return bytes
    }
}
