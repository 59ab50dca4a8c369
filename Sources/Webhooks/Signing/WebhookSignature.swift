import Cryptography
import Foundation

/// The Standard Webhooks signature: `v1,` and the base64 of HMAC-SHA256 over
/// `{webhook-id}.{webhook-timestamp}.{body}` with the secret's key (`Cryptography.HMACSHA256`). Several
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
        return "v1," + Data(HMACSHA256.authenticationCode(for: content, key: secret.key)).base64EncodedString()
    }
}
