import CCrypto
import Foundation

/// The Standard Webhooks signature: `v1,` and the base64 of HMAC-SHA256 over
/// `{webhook-id}.{webhook-timestamp}.{body}` with the secret's key (OpenSSL's HMAC). Several
/// signatures (a rotated secret beside the new one) are separated by spaces; a receiver accepts
/// the message when any of them verifies. Pure.
public enum WebhookSignature {
    /// The `webhook-signature` header for `body`, signed with every one of `secrets`.
    public static func header(messageID: String, timestamp: Int64, body: [UInt8], secrets: [WebhookSecret]) -> String {
        secrets.map { sign(messageID: messageID, timestamp: timestamp, body: body, secret: $0) }.joined(separator: " ")
    }

    /// One `v1,<base64>` signature.
    public static func sign(messageID: String, timestamp: Int64, body: [UInt8], secret: WebhookSecret) -> String {
        let content = Array("\(messageID).\(timestamp).".utf8) + body
        return "v1," + Data(hmacSHA256(key: secret.key, message: content)).base64EncodedString()
    }

    static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let result = key.withUnsafeBufferPointer { keyBytes in
            message.withUnsafeBufferPointer { bytes in
                HMAC(EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count), bytes.baseAddress, bytes.count, &digest, &length)
            }
        }
        // HMAC fails only when libcrypto cannot allocate its context: nothing to recover.
        precondition(result != nil && length == 32, "libcrypto could not compute HMAC-SHA256")
        return Array(digest.prefix(Int(length)))
    }
}
