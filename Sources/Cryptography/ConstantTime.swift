import CCrypto

/// Comparisons whose time does not depend on where two secrets differ (libcrypto's
/// `CRYPTO_memcmp`): key digests, MACs, signatures in links.
public enum ConstantTime {
    /// Whether `left` and `right` hold the same bytes. Lengths are compared first and are not
    /// secret (a digest or a MAC has a fixed one); the bytes are compared in constant time.
    public static func equals(_ left: [UInt8], _ right: [UInt8]) -> Bool {
        guard left.count == right.count else { return false }
        guard !left.isEmpty else { return true }
        return left.withUnsafeBytes { l in
            right.withUnsafeBytes { r in CRYPTO_memcmp(l.baseAddress, r.baseAddress, l.count) == 0 }
        }
    }
}
