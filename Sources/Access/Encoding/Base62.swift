import Cryptography

/// Digits and letters only (`0-9A-Za-z`): API keys stay one "word" that a double click selects
/// and a secret scanner's regular expression matches, with no character a URL, a shell or a
/// header needs to escape.
enum Base62 {
    static let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".utf8)

    static func isDigit(_ character: UInt8) -> Bool {
        (0x30...0x39).contains(character) || (0x41...0x5A).contains(character) || (0x61...0x7A).contains(character)
    }

    static func value(of character: UInt8) -> UInt64? {
        switch character {
        case 0x30...0x39: UInt64(character - 0x30)
        case 0x41...0x5A: UInt64(character - 0x41 + 10)
        case 0x61...0x7A: UInt64(character - 0x61 + 36)
        default: nil
        }
    }

    /// `value` in exactly `width` digits, most significant first (zero-padded).
    static func encode(_ value: UInt64, width: Int) -> [UInt8] {
        var digits = [UInt8](repeating: alphabet[0], count: width)
        var rest = value
        for index in stride(from: width - 1, through: 0, by: -1) {
            digits[index] = alphabet[Int(rest % 62)]
            rest /= 62
        }
        precondition(rest == 0, "Base62.encode: \(value) needs more than \(width) digits")
        return digits
    }

    /// The value of `digits`, or nil when one is not base62 or the value overflows.
    static func decode(_ digits: some Collection<UInt8>) -> UInt64? {
        var result: UInt64 = 0
        for character in digits {
            guard let digit = value(of: character) else { return nil }
            let (times, overflowTimes) = result.multipliedReportingOverflow(by: 62)
            let (sum, overflowSum) = times.addingReportingOverflow(digit)
            guard !overflowTimes, !overflowSum else { return nil }
            result = sum
        }
        return result
    }

    /// `count` uniformly random digits: bytes from the CSPRNG, those ≥ 248 (= 4 × 62) rejected so
    /// every digit is equally likely.
    static func randomDigits(count: Int, random: (Int) throws(CryptographyError) -> [UInt8]) throws(CryptographyError) -> [UInt8] {
        var digits: [UInt8] = []
        digits.reserveCapacity(count)
        while digits.count < count {
            for byte in try random(count) where byte < 248 && digits.count < count {
                digits.append(alphabet[Int(byte % 62)])
            }
        }
        return digits
    }
}
