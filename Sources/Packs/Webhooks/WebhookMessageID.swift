/// The `webhook-id` of a message: `msg_` and 26 characters of base32 (128 random bits), the same
/// on every attempt and every endpoint of the message, never reused (a receiver drops duplicates
/// by it, so an id repeated after a database reset would lose messages).
public enum WebhookMessageID {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567".utf8)

    public static func random() -> String {
        var generator = SystemRandomNumberGenerator()
        var bits = (generator.next() as UInt64, generator.next() as UInt64)
        var characters: [UInt8] = Array("msg_".utf8)
        for index in 0..<26 {
            let value: UInt64
            if index < 13 {
                value = bits.0 & 31
                bits.0 >>= 5
            } else {
                value = bits.1 & 31
                bits.1 >>= 5
            }
            characters.append(alphabet[Int(value)])
        }
        return String(decoding: characters, as: UTF8.self)
    }
}
