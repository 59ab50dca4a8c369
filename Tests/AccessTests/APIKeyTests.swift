@testable import Access
import Cryptography
import Packs
import Testing

@Suite struct APIKeyTests {
    @Test func generatedKeysHaveTheDocumentedForm() throws {
        var seen = Set<String>()
        for _ in 0..<200 {
            let key = try APIKey.generate()
            #expect(key.text.utf8.count == 44 && key.text.hasPrefix("packd_"))
            #expect(key.text.dropFirst(6).utf8.allSatisfy(Base62.isDigit))
            // What a secret scanner runs: the pattern, then the checksum.
            #expect(key.text.wholeMatch(of: /packd_[0-9A-Za-z]{38}/) != nil)
            #expect(try APIKey(parsing: key.text).text == key.text)
            seen.insert(key.text)
        }
        #expect(seen.count == 200)
    }

    @Test func acceptsKeysMadeByTheReferenceScript() throws {
        // zlib.crc32 in Python, base62 by hand: the checksum is not packd's own say-so.
        let keys = try #require(try Vectors.json("api_keys")["keys"] as? [String])
        #expect(keys.count == 8)
        for text in keys {
            #expect(throws: Never.self) { try APIKey(parsing: text) }
        }
    }

    @Test func refusesEveryMalformedText() throws {
        let key = try APIKey.generate().text
        #expect(throws: APIKey.FormatError.prefix) { try APIKey(parsing: "ghp_" + key.dropFirst(6)) }
        #expect(throws: APIKey.FormatError.prefix) { try APIKey(parsing: "") }
        #expect(throws: APIKey.FormatError.length(43)) { try APIKey(parsing: key.dropLast()) }
        #expect(throws: APIKey.FormatError.length(45)) { try APIKey(parsing: key + "0") }
        #expect(throws: APIKey.FormatError.character) { try APIKey(parsing: key.prefix(20) + "-" + key.dropFirst(21)) }
        // Any one character of the secret or the checksum changed: the CRC-32 no longer matches
        // (a CRC detects every single-character error).
        let characters = Array(key)
        for index in 6..<44 {
            var altered = characters
            altered[index] = altered[index] == "a" ? "b" : "a"
            #expect(throws: APIKey.FormatError.checksum) { try APIKey(parsing: String(altered)) }
        }
        // Two neighbours swapped.
        var swapped = characters
        if swapped[10] != swapped[11] {
            swapped.swapAt(10, 11)
            #expect(throws: APIKey.FormatError.checksum) { try APIKey(parsing: String(swapped)) }
        }
    }

    @Test func isHeldOnlyAsItsDigest() throws {
        let key = try APIKey.generate()
        #expect(key.digest == SHA256.hash(key.text.utf8))
        #expect(key.matches(digest: key.digest))
        #expect(try !key.matches(digest: APIKey.generate().digest))
        var dumped = ""
        dump(key, to: &dumped)
        for text in [key.description, String(describing: key), String(reflecting: key), dumped] {
            #expect(!text.contains(String(key.text.dropFirst(6).prefix(8))), "\(text)")
        }
        for error in [APIKey.FormatError.prefix, .length(3), .character, .checksum] {
            #expect(!error.description.contains(key.text))
        }
    }

    @Test func recordsMakePrincipalsUntilTheyExpire() {
        let record = KeyRecord(id: "k7", tenant: TenantID("acme")!, role: .write, name: "fleet", secretDigest: [1, 2],
                               createdAt: 100, expiresAt: 200, packs: [PackID(42)!])
        let principal = record.principal(at: 200)
        #expect(principal == Principal(tenant: TenantID("acme")!, role: .write, actor: .key(id: "k7", name: "fleet"), packs: [PackID(42)!],
                                       rateLimitKey: "key:k7"))
        #expect(record.principal(at: 201) == nil)
        #expect(principal?.mayReach(pack: PackID(42)!) == true && principal?.mayReach(pack: PackID(43)!) == false)
        #expect(principal?.allows(.write) == true && principal?.allows(.admin) == false)
        #expect(KeyRecord(id: "k", tenant: .default, role: .read, name: "n", secretDigest: [], createdAt: 0).principal(at: .max) != nil)
        #expect(KeyRecord.problem(withName: "") != nil)
        #expect(KeyRecord.problem(withName: String(repeating: "x", count: 201)) != nil)
        #expect(KeyRecord.problem(withName: "tab\there") != nil)
        #expect(KeyRecord.problem(withName: "Flotte Zürich ✓") == nil)
    }
}

@Suite struct DomainAccessTests {
    @Test func tenantIDsAreSlugs() {
        for good in ["default", "acme", "fleet-eu-2", "a", "0", String(repeating: "x", count: 63)] {
            #expect(TenantID(good)?.rawValue == good)
        }
        for bad in ["", "-acme", "acme-", "Acme", "ac me", "acme_1", "ä", String(repeating: "x", count: 64), "a/b"] {
            #expect(TenantID(bad) == nil, "\(bad)")
        }
        #expect(TenantID.default.rawValue == "default")
    }

    @Test func rolesAreOrderedUpToOperator() {
        #expect(Role.read < .write && Role.write < .admin && Role.admin < .operator)
        for role in Role.allCases { #expect(Role(name: role.name) == role) }
        #expect(Role(name: "root") == nil && Role(name: "Admin") == nil)
        let operatorPrincipal = Principal(tenant: .default, role: .operator, actor: .token(subject: "ops"), rateLimitKey: "sub:x")
        #expect(operatorPrincipal.isOperator && operatorPrincipal.allows(.admin) && operatorPrincipal.mayReach(pack: PackID(1)!))
    }
}
