import Cryptography
import Testing

@Suite struct SHA256Tests {
    func digest(_ text: String) -> String { hex(SHA256.hash(Array(text.utf8))) }

    @Test func matchesTheFIPSVectors() {
        #expect(digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(digest("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        // 64 bytes: the padding needs a second block.
        #expect(digest(String(repeating: "a", count: 64)) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb")
        #expect(digest(String(repeating: "a", count: 1_000_000)) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func acceptsNonContiguousCollections() {
        // A String's UTF-8 view and a lazy map have no contiguous storage to lend.
        #expect(SHA256.hash("abc".utf8) == SHA256.hash(Array("abc".utf8)))
        #expect(SHA256.hash([0x61, 0x62, 0x63].lazy.map { UInt8($0) }) == SHA256.hash(Array("abc".utf8)))
    }

    @Test func hasherOverPiecesEqualsTheOneShotDigest() throws {
        let message = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        for cut in [0, 1, 63, 64, 65, 4_999, 10_000] {
            let hasher = try SHA256.Hasher()
            try hasher.update(Array(message[..<cut]))
            try hasher.update(Array(message[cut...]))
            #expect(try hasher.finalize() == SHA256.hash(message), "cut at \(cut)")
        }
        #expect(try SHA256.Hasher().finalize() == SHA256.hash([UInt8]()))
    }
}

@Suite struct HMACSHA256Tests {
    // RFC 4231 §4.2, §4.3, §4.7 (test cases 1, 2 and 6: a key longer than the block is hashed first).
    @Test func matchesRFC4231() {
        #expect(hex(HMACSHA256.authenticationCode(for: Array("Hi There".utf8), key: [UInt8](repeating: 0x0b, count: 20)))
            == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        #expect(hex(HMACSHA256.authenticationCode(for: Array("what do ya want for nothing?".utf8), key: Array("Jefe".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        #expect(hex(HMACSHA256.authenticationCode(for: Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8),
                                                  key: [UInt8](repeating: 0xaa, count: 131)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func anEmptyKeyAndMessageAreLegal() {
        // Python: hmac.new(b"", b"", hashlib.sha256).hexdigest()
        #expect(hex(HMACSHA256.authenticationCode(for: [UInt8](), key: [UInt8]()))
            == "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad")
    }

    @Test func validatesOnlyTheExactCode() {
        let key = Array("Jefe".utf8), message = Array("what do ya want for nothing?".utf8)
        let code = HMACSHA256.authenticationCode(for: message, key: key)
        #expect(HMACSHA256.isValid(code, for: message, key: key))
        for index in [0, 15, 31] {
            var altered = code
            altered[index] ^= 0x01
            #expect(!HMACSHA256.isValid(altered, for: message, key: key))
        }
        #expect(!HMACSHA256.isValid(code.prefix(16), for: message, key: key))
        #expect(!HMACSHA256.isValid(code, for: message + [0], key: key))
        #expect(!HMACSHA256.isValid(code, for: message, key: key + [1]))
        // (Not `key + [0]`: HMAC pads short keys with zeros, so those two keys are one — RFC 2104 §2.
        // packd's HMAC keys have fixed lengths.)
        #expect(HMACSHA256.isValid(code, for: message, key: key + [0]))
    }
}

@Suite struct ConstantTimeTests {
    @Test func comparesBytesAndLengths() {
        #expect(ConstantTime.equals([], []))
        #expect(ConstantTime.equals([1, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2, 4]))
        #expect(!ConstantTime.equals([0, 2, 3], [1, 2, 3]))
        #expect(!ConstantTime.equals([1, 2, 3], [1, 2]))
        #expect(!ConstantTime.equals([], [0]))
    }
}

@Suite struct SecureRandomTests {
    @Test func givesTheCountAskedForAndDifferentBytesEachTime() throws {
        #expect(try SecureRandom.bytes(count: 0).isEmpty)
        let first = try SecureRandom.bytes(count: 32), second = try SecureRandom.bytes(count: 32)
        #expect(first.count == 32 && second.count == 32)
        // 2^-256 to fail by chance.
        #expect(first != second)
        // Every byte value turns up in 64 KiB (each is missing with probability ~e^-256).
        #expect(Set(try SecureRandom.bytes(count: 1 << 16)).count == 256)
    }
}
