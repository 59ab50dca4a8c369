import Cryptography
import Testing

@Suite struct Ed25519Tests {
    // RFC 8032 §7.1, TEST 1 (empty message) and TEST 2 (one byte).
    static let vectors: [(seed: String, publicKey: String, message: String, signature: String)] = [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
         "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
         "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ]

    @Test func matchesRFC8032() throws {
        for vector in Self.vectors {
            let key = try Ed25519.PrivateKey(seed: bytes(hex: vector.seed))
            #expect(hex(key.publicKey.rawRepresentation) == vector.publicKey)
            #expect(try key.seed() == bytes(hex: vector.seed))
            let signature = try key.signature(for: bytes(hex: vector.message))
            // Ed25519 is deterministic: the same key and message give the published signature.
            #expect(hex(signature) == vector.signature)
            let publicKey = try Ed25519.PublicKey(rawRepresentation: bytes(hex: vector.publicKey))
            #expect(publicKey.isValidSignature(bytes(hex: vector.signature), for: bytes(hex: vector.message)))
        }
    }

    @Test func refusesAlteredSignaturesMessagesAndOtherKeys() throws {
        let key = try Ed25519.PrivateKey()
        let message = Array("{\"pack\":42}".utf8)
        let signature = try key.signature(for: message)
        #expect(key.publicKey.isValidSignature(signature, for: message))
        for index in [0, 31, 32, 63] {
            var altered = signature
            altered[index] ^= 0x80
            #expect(!key.publicKey.isValidSignature(altered, for: message), "signature byte \(index)")
        }
        for index in message.indices {
            var altered = message
            altered[index] ^= 0x01
            #expect(!key.publicKey.isValidSignature(signature, for: altered), "message byte \(index)")
        }
        #expect(!key.publicKey.isValidSignature(signature.prefix(63), for: message))
        #expect(!key.publicKey.isValidSignature(signature + [0], for: message))
        #expect(!key.publicKey.isValidSignature([], for: message))
        #expect(try !Ed25519.PrivateKey().publicKey.isValidSignature(signature, for: message))
    }

    @Test func refusesKeysOfTheWrongLength() {
        #expect(throws: CryptographyError.invalidKeyLength(algorithm: "Ed25519", expected: 32, actual: 31)) {
            try Ed25519.PrivateKey(seed: [UInt8](repeating: 1, count: 31))
        }
        #expect(throws: CryptographyError.invalidKeyLength(algorithm: "Ed25519 public", expected: 32, actual: 33)) {
            try Ed25519.PublicKey(rawRepresentation: [UInt8](repeating: 1, count: 33))
        }
    }

    @Test func neverShowsTheSeed() throws {
        let seed = bytes(hex: Self.vectors[0].seed)
        let key = try Ed25519.PrivateKey(seed: seed)
        var dumped = ""
        dump(key, to: &dumped)
        for text in [key.description, String(describing: key), String(reflecting: key), dumped] {
            #expect(!text.contains(hex(seed)) && !text.contains("9d61b1"), "\(text)")
        }
        #expect(key.description.contains("d75a9801"))
    }
}
