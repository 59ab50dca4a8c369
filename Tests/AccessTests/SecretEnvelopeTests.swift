@testable import Access
import Cryptography
import Foundation
import Testing

@Suite struct SecretEnvelopeTests {
    func keyring(_ document: [String: Any], withOld: Bool) throws -> SecretsKeyring {
        let text = try #require(document["key"] as? String) + "\n" + (withOld ? try #require(document["old_key"] as? String) : "")
        return try SecretsKeyring(fileContents: Array(text.utf8), source: "keys")
    }

    @Test func opensWhatTheReferenceLibrarySealed() throws {
        // Python's AESGCM sealed these in the documented format (scripts/verify_access.py seal).
        let document = try Vectors.json("secrets")
        let ring = try keyring(document, withOld: true)
        #expect(ring.current.id == document["key_id"] as? String)
        #expect(ring.previous.map(\.id) == [try #require(document["old_key_id"] as? String)])
        let values = try #require(document["values"] as? [[String: Any]])
        for value in values {
            let sealed = try #require(value["sealed"] as? String), context = try #require(value["context"] as? String)
            #expect(try SecretEnvelope.open(sealed, context: context, keyring: ring) == Vectors.bytes(hex: try #require(value["plaintext"] as? String)))
            #expect(throws: SecretEnvelope.OpenError.authenticationFailed(keyID: try SecretEnvelope.keyID(of: sealed))) {
                try SecretEnvelope.open(sealed, context: context + "x", keyring: ring)
            }
        }
    }

    @Test func rotationSealsAgainUnderTheCurrentKey() throws {
        let document = try Vectors.json("secrets")
        let ring = try keyring(document, withOld: true)
        let currentOnly = try keyring(document, withOld: false)
        let values = try #require(document["values"] as? [[String: Any]])
        let old = try #require(values.first { $0["current"] as? Bool == false })
        let sealed = try #require(old["sealed"] as? String), context = try #require(old["context"] as? String)
        #expect(throws: SecretEnvelope.OpenError.unknownKey(try #require(document["old_key_id"] as? String))) {
            try SecretEnvelope.open(sealed, context: context, keyring: currentOnly)
        }
        let resealed = try #require(try SecretEnvelope.resealed(sealed, context: context, keyring: ring))
        #expect(try SecretEnvelope.keyID(of: resealed) == ring.current.id)
        #expect(try SecretEnvelope.open(resealed, context: context, keyring: currentOnly) == SecretEnvelope.open(sealed, context: context, keyring: ring))
        #expect(try SecretEnvelope.resealed(resealed, context: context, keyring: ring) == nil)
    }

    @Test func sealsWithAFreshNonceAndRefusesTampering() throws {
        let ring = SecretsKeyring(current: try SecretsKey.generate().key)
        let secret = Array("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".utf8)
        let first = try SecretEnvelope.seal(secret, context: "webhook:1:secret", keyring: ring)
        let second = try SecretEnvelope.seal(secret, context: "webhook:1:secret", keyring: ring)
        #expect(first != second)
        #expect(first.hasPrefix("v1:\(ring.current.id):") && SecretEnvelope.isSealed(first))
        #expect(!first.contains("whsec") && !first.contains(Base64URL.encode(secret)))
        #expect(try SecretEnvelope.open(first, context: "webhook:1:secret", keyring: ring) == secret)
        // Moved to another row: the context is authenticated.
        #expect(throws: SecretEnvelope.OpenError.authenticationFailed(keyID: ring.current.id)) {
            try SecretEnvelope.open(first, context: "webhook:2:secret", keyring: ring)
        }
        let parts = first.split(separator: ":").map(String.init)
        var sealed = try #require(Base64URL.decode(parts[3]))
        for index in [0, sealed.count - 1] {
            sealed[index] ^= 1
            let altered = [parts[0], parts[1], parts[2], Base64URL.encode(sealed)].joined(separator: ":")
            #expect(throws: SecretEnvelope.OpenError.authenticationFailed(keyID: ring.current.id)) {
                try SecretEnvelope.open(altered, context: "webhook:1:secret", keyring: ring)
            }
            sealed[index] ^= 1
        }
        for malformed in ["", "v1:abc", "v2:\(parts[1]):\(parts[2]):\(parts[3])", "v1:short:\(parts[2]):\(parts[3])",
                          "v1:\(parts[1]):AAAA:\(parts[3])", "v1:\(parts[1]):\(parts[2]):AAAA", "whsec_plain"] {
            #expect(!SecretEnvelope.isSealed(malformed), "\(malformed)")
        }
    }

    @Test func readsKeyFilesAndSaysWhatIsWrongWithoutShowingKeys() throws {
        let raw = [UInt8](repeating: 0xA5, count: 32)
        let base64 = Data(raw).base64EncodedString()
        #expect(try SecretsKeyring(fileContents: raw, source: "f").current.id == SecretsKey(bytes: raw).id)
        #expect(try SecretsKeyring(fileContents: Array("\(base64)\n".utf8), source: "f").current.id == SecretsKey(bytes: raw).id)
        let url = base64.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        #expect(try SecretsKeyring(fileContents: Array("# comment\n\n  \(url)  \n".utf8), source: "f").current.id == SecretsKey(bytes: raw).id)
        let failures: [(String, String)] = [
            ("", "f: no key in the file"),
            ("# only a comment\n", "f: no key in the file"),
            ("c2hvcnQ=\n", "f line 1: a key is 32 bytes in base64 (44 characters)"),
            ("\(base64)\nnot base64!\n", "f line 2: a key is 32 bytes in base64 (44 characters)"),
            ("\(base64)\n\(base64)\n", "f: the same key is listed twice"),
        ]
        for (contents, message) in failures {
            #expect(throws: SecretsKeyring.FileError(description: message)) { try SecretsKeyring(fileContents: Array(contents.utf8), source: "f") }
        }
        let key = try SecretsKey(bytes: raw)
        var dumped = ""
        dump(key, to: &dumped)
        #expect(!"\(key) \(dumped)".contains("165") && !"\(key)".contains(base64.prefix(8)))
    }
}
