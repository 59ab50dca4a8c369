/// The 256-code-point glyph ranges a MapLibre client requests per font stack, and their URLs.
public enum GlyphRanges {
    /// Code points per glyph PBF: ranges are `0-255 … 65280-65535`.
    public static let rangeSize = 256
    public static let rangeCount = 256

    /// The first code point of each range to download, ascending.
    ///
    /// Without ideographs, MapLibre skips a range when its *first* code point is one it can draw
    /// locally (`allowsFixedWidthGlyphGeneration`: CJK Unified Ideographs U+4E00–U+9FFF and Hangul
    /// Syllables U+AC00–U+D7AF); that leaves 130 of the 256 ranges.
    public static func starts(includeIdeographs: Bool) -> [Int] {
        (0..<rangeCount).map { $0 * rangeSize }.filter { includeIdeographs || !isLocallyRendered($0) }
    }

    static func isLocallyRendered(_ codePoint: Int) -> Bool {
        (0x4E00...0x9FFF).contains(codePoint) || (0xAC00...0xD7AF).contains(codePoint)
    }

    /// `template` with `{fontstack}` (the comma-joined stack, percent-encoded as MapLibre does:
    /// only `A-Z a-z 0-9 - _ . ~` kept, lowercase hex) and `{range}` (`start-end`) replaced.
    public static func url(template: String, fontStack: [String], rangeStart: Int) -> String {
        let encodedStack = percentEncode(fontStack.joined(separator: ","))
        let range = "\(rangeStart)-\(rangeStart + rangeSize - 1)"
        return replacing(["{fontstack}": encodedStack, "{range}": range], in: template)
    }

    /// Every occurrence of each key of `replacements` in `text`, replaced, in one pass over its
    /// bytes (Foundation's `replacingOccurrences` cost tens of microseconds a call, and a plan
    /// formats 256 URLs per font stack).
    static func replacing(_ replacements: [String: String], in text: String) -> String {
        let bytes = Array(text.utf8)
        let keys = replacements.map { (Array($0.key.utf8), Array($0.value.utf8)) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 32)
        var index = 0
        scan: while index < bytes.count {
            if bytes[index] == UInt8(ascii: "{") {
                for (key, value) in keys where bytes[index...].starts(with: key) {
                    out += value
                    index += key.count
                    continue scan
                }
            }
            out.append(bytes[index])
            index += 1
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789abcdef")
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                encoded.append("%")
                encoded.append(hex[Int(byte >> 4)])
                encoded.append(hex[Int(byte & 0x0F)])
            }
        }
        return encoded
    }
}
