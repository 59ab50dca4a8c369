import Foundation

/// RFC 4648 base64 with padding (Foundation's codec, in one place).
enum Base64 {
    static func encode(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }

    static func decode(_ text: String) -> [UInt8]? {
        Data(base64Encoded: text).map(Array.init)
    }
}
