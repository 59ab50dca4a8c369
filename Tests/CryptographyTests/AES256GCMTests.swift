@testable import Cryptography
import Testing

@Suite struct AES256GCMTests {
    // McGrew & Viega, "The Galois/Counter Mode of Operation", test case 16 (AES-256, 96-bit IV,
    // associated data), also checked with Python's `cryptography` AESGCM.
    static let key = "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308"
    static let nonce = "cafebabefacedbaddecaf888"
    static let plaintext = "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39"
    static let associatedData = "feedfacedeadbeeffeedfacedeadbeefabaddad2"
    static let ciphertext = "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
    static let tag = "76fc6ece0f4e1768cddf8853bb2d551b"

    @Test func matchesTheGCMSpecification() throws {
        let key = try AES256GCM.Key(bytes: bytes(hex: Self.key))
        let box = try AES256GCM.seal(bytes(hex: Self.plaintext), using: key, nonce: bytes(hex: Self.nonce),
                                     associatedData: bytes(hex: Self.associatedData))
        #expect(hex(box.ciphertext) == Self.ciphertext)
        #expect(hex(box.tag) == Self.tag)
        #expect(try AES256GCM.open(box, using: key, associatedData: bytes(hex: Self.associatedData)) == bytes(hex: Self.plaintext))
        // Test case 13: the zero key, zero nonce, nothing to encrypt — the tag alone.
        let empty = try AES256GCM.seal([], using: AES256GCM.Key(bytes: [UInt8](repeating: 0, count: 32)),
                                       nonce: [UInt8](repeating: 0, count: 12), associatedData: [])
        #expect(empty.ciphertext.isEmpty && hex(empty.tag) == "530f8afbc74536b9a963b4f1c4cb738b")
    }

    @Test func roundTripsWithAFreshNonceEachTime() throws {
        let key = try AES256GCM.Key.generate()
        let secret = Array("whsec_c2VjcmV0LXNlY3JldC1zZWNyZXQ=".utf8)
        let first = try AES256GCM.seal(secret, using: key, associatedData: Array("webhook:7".utf8))
        let second = try AES256GCM.seal(secret, using: key, associatedData: Array("webhook:7".utf8))
        #expect(first.nonce != second.nonce && first.ciphertext != second.ciphertext)
        #expect(first.nonce.count == 12 && first.tag.count == 16 && first.ciphertext.count == secret.count)
        #expect(try AES256GCM.open(first, using: key, associatedData: Array("webhook:7".utf8)) == secret)
        #expect(try AES256GCM.open(second, using: key, associatedData: Array("webhook:7".utf8)) == secret)
    }

    @Test func refusesAnyAlteration() throws {
        let key = try AES256GCM.Key.generate()
        let data = Array("link:tenant-a".utf8)
        let box = try AES256GCM.seal(Array("a link secret".utf8), using: key, associatedData: data)
        func refused(_ box: AES256GCM.SealedBox, key: AES256GCM.Key, data: [UInt8]) -> Bool {
            do {
                _ = try AES256GCM.open(box, using: key, associatedData: data)
                return false
            } catch {
                return error == .authenticationFailed
            }
        }
        #expect(refused(box, key: try .generate(), data: data))
        #expect(refused(box, key: key, data: Array("link:tenant-b".utf8)))
        #expect(refused(box, key: key, data: []))
        for index in box.ciphertext.indices {
            var ciphertext = box.ciphertext
            ciphertext[index] ^= 0x01
            #expect(refused(try .init(nonce: box.nonce, ciphertext: ciphertext, tag: box.tag), key: key, data: data))
        }
        var nonce = box.nonce
        nonce[11] ^= 0x01
        #expect(refused(try .init(nonce: nonce, ciphertext: box.ciphertext, tag: box.tag), key: key, data: data))
        var tag = box.tag
        tag[0] ^= 0x01
        #expect(refused(try .init(nonce: box.nonce, ciphertext: box.ciphertext, tag: tag), key: key, data: data))
        #expect(refused(try .init(nonce: box.nonce, ciphertext: Array(box.ciphertext.dropLast()), tag: box.tag), key: key, data: data))
    }

    @Test func refusesMalformedKeysNoncesAndTags() {
        #expect(throws: CryptographyError.invalidKeyLength(algorithm: "AES-256-GCM", expected: 32, actual: 16)) {
            try AES256GCM.Key(bytes: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptographyError.invalidLength(of: "an AES-GCM nonce", expected: 12, actual: 16)) {
            try AES256GCM.SealedBox(nonce: [UInt8](repeating: 0, count: 16), ciphertext: [], tag: [UInt8](repeating: 0, count: 16))
        }
        #expect(throws: CryptographyError.invalidLength(of: "an AES-GCM tag", expected: 16, actual: 12)) {
            try AES256GCM.SealedBox(nonce: [UInt8](repeating: 0, count: 12), ciphertext: [], tag: [UInt8](repeating: 0, count: 12))
        }
    }

    @Test func neverShowsTheKey() throws {
        let key = try AES256GCM.Key(bytes: bytes(hex: Self.key))
        var dumped = ""
        dump(key, to: &dumped)
        for text in [key.description, String(describing: key), String(reflecting: key), dumped, "\(CryptographyError.authenticationFailed)"] {
            #expect(!text.contains("feffe9") && !text.contains("254"), "\(text)")
        }
    }
}
