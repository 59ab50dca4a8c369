import CCrypto

/// HMAC-SHA256 (RFC 2104, RFC 4231) from libcrypto: Standard Webhooks signatures and device-link
/// signatures.
public enum HMACSHA256 {
    public static let byteCount = 32

    /// The authentication code of `message` under `key`.
    public static func authenticationCode(for message: some Collection<UInt8>, key: some Collection<UInt8>) -> [UInt8] {
        let message = Array(message)
        // A zero-length key is legal HMAC; libcrypto wants a non-null pointer for it all the same.
        let keyLength = key.count
        let key = keyLength == 0 ? [0] : Array(key)
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { bytes in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyLength),
                     bytes.baseAddress, bytes.count, &code, &length)
            }
        }
        // HMAC fails only when libcrypto cannot allocate its context: nothing to recover.
        precondition(result != nil && length == UInt32(byteCount), "libcrypto could not compute HMAC-SHA256")
        return Array(code.prefix(byteCount))
    }

    /// Whether `code` is the authentication code of `message` under `key`, compared in constant time.
    public static func isValid(_ code: some Collection<UInt8>, for message: some Collection<UInt8>, key: some Collection<UInt8>) -> Bool {
        ConstantTime.equals(authenticationCode(for: message, key: key), Array(code))
    }
}
