@testable import Access
import Cryptography
import Testing

@Suite struct Base64URLTests {
    // RFC 4648 §10, in the URL alphabet without padding.
    @Test func matchesRFC4648() {
        let vectors = ["": "", "f": "Zg", "fo": "Zm8", "foo": "Zm9v", "foob": "Zm9vYg", "fooba": "Zm9vYmE", "foobar": "Zm9vYmFy"]
        for (text, encoded) in vectors {
            #expect(Base64URL.encode(Array(text.utf8)) == encoded)
            #expect(Base64URL.decode(encoded) == Array(text.utf8))
        }
        #expect(Base64URL.encode([0xfb, 0xff, 0xfe]) == "-__-")
        #expect(Base64URL.decode("-__-") == [0xfb, 0xff, 0xfe])
    }

    @Test func roundTripsEveryLength() {
        for length in 0..<70 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64URL.decode(Base64URL.encode(bytes)) == bytes)
        }
    }

    @Test func refusesNonCanonicalText() {
        #expect(Base64URL.decode("Zg==") == nil, "padding")
        #expect(Base64URL.decode("Zm9v+g") == nil, "the standard alphabet")
        #expect(Base64URL.decode("Zm9v/g") == nil)
        #expect(Base64URL.decode("Zm 9v") == nil, "whitespace")
        #expect(Base64URL.decode("Z") == nil, "a length no encoding has")
        // "Zh" has non-zero unused bits: it would decode to "f" as "Zg" does.
        #expect(Base64URL.decode("Zh") == nil)
        #expect(Base64URL.decode("Zm9") == nil)
    }
}

@Suite struct Base62Tests {
    @Test func encodesFixedWidthAndBack() {
        #expect(String(decoding: Base62.encode(0, width: 6), as: UTF8.self) == "000000")
        #expect(String(decoding: Base62.encode(61, width: 2), as: UTF8.self) == "0z")
        #expect(String(decoding: Base62.encode(62, width: 2), as: UTF8.self) == "10")
        #expect(String(decoding: Base62.encode(UInt64(UInt32.max), width: 6), as: UTF8.self) == "4gfFC3")
        for value: UInt64 in [0, 1, 61, 62, 3_844, 1 << 31, UInt64(UInt32.max)] {
            #expect(Base62.decode(Base62.encode(value, width: 6)) == value)
        }
        #expect(Base62.decode(Array("ab-".utf8)) == nil)
        #expect(Base62.decode(Array(String(repeating: "z", count: 12).utf8)) == nil, "overflows 64 bits")
    }

    @Test func randomDigitsAreUniformOverTheAlphabet() throws {
        // Bytes 248...255 are rejected: a stream of only those must never become digits.
        var calls = 0
        let digits = try Base62.randomDigits(count: 4) { count in
            calls += 1
            return calls == 1 ? [UInt8](repeating: 250, count: count) : [0, 61, 62, 247]
        }
        #expect(String(decoding: digits, as: UTF8.self) == "0z0z")
        let many = try Base62.randomDigits(count: 62 * 400, random: SecureRandom.bytes(count:))
        var counts = [UInt8: Int]()
        for digit in many { counts[digit, default: 0] += 1 }
        #expect(counts.count == 62)
        // 400 expected per digit; 5 standard deviations (~100) either side.
        #expect(counts.values.allSatisfy { (280...520).contains($0) }, "\(counts.values.sorted())")
    }
}
