@testable import Access
import Cryptography
import Packs
import Testing

@Suite struct DeviceLinkTests {
    static let secret = [UInt8](repeating: 7, count: 32)

    @Test func signsExactlyAsTheReferenceScript() throws {
        // Python's hmac over the documented string (scripts/verify_access.py link_signature).
        let document = try Vectors.json("device_links")
        let signer = try DeviceLinkSigner(secret: Vectors.bytes(hex: try #require(document["secret"] as? String)))
        let links = try #require(document["links"] as? [[String: Any]])
        #expect(links.count == 4)
        for link in links {
            let path = try #require(link["path"] as? String), query = try #require(link["query"] as? String)
            let expires = try #require(link["expires"] as? Int64)
            let parameters = try #require(link["parameters"] as? [String: String])
            #expect(try signer.signedQuery(path: path, parameters: parameters, expires: expires) == query)
            #expect(signer.verify(method: "GET", path: path, query: query, now: expires) == .valid(expires: expires))
            #expect(signer.verify(method: "HEAD", path: path, query: query, now: expires - 1000) == .valid(expires: expires))
            #expect(signer.verify(method: "GET", path: path, query: query + "&from=3", now: expires) == .valid(expires: expires))
            #expect(signer.verify(method: "GET", path: path, query: query, now: expires + 1) == .expired(at: expires))
        }
    }

    @Test func theSignedStringIsTheDocumentedOne() {
        #expect(DeviceLinkSigner.canonicalString(method: "GET", path: "/v1/packs/42/versions/3/export",
                                                 signed: ["since": "2", "expires": "1767225600", "format": "pmtiles"])
            == "packd-link-v1\nGET\n/v1/packs/42/versions/3/export\nexpires=1767225600&format=pmtiles&since=2")
        #expect(DeviceLinkSigner.canonicalString(method: "HEAD", path: "/v1/packs/42/updates", signed: ["expires": "9"])
            == "packd-link-v1\nGET\n/v1/packs/42/updates\nexpires=9")
    }

    @Test func refusesAnyChangeToWhatIsSigned() throws {
        let signer = try DeviceLinkSigner(secret: Self.secret)
        let path = "/v1/packs/42/versions/3/export"
        let query = try signer.signedQuery(path: path, parameters: ["format": "pmtiles", "since": "2"], expires: 1_000)
        #expect(signer.verify(method: "GET", path: path, query: query, now: 10) == .valid(expires: 1_000))
        // Another pack, another version, another format or delta base, a later expiry.
        #expect(signer.verify(method: "GET", path: "/v1/packs/43/versions/3/export", query: query, now: 10) == .badSignature)
        #expect(signer.verify(method: "GET", path: "/v1/packs/42/versions/4/export", query: query, now: 10) == .badSignature)
        #expect(signer.verify(method: "GET", path: path, query: query.replacingOccurrences(of: "pmtiles", with: "mbtiles"), now: 10) == .badSignature)
        #expect(signer.verify(method: "GET", path: path, query: query.replacingOccurrences(of: "since=2", with: "since=1"), now: 10) == .badSignature)
        #expect(signer.verify(method: "GET", path: path, query: query.replacingOccurrences(of: "expires=1000", with: "expires=9000"), now: 10) == .badSignature)
        // Dropping a signed parameter changes the string too.
        #expect(signer.verify(method: "GET", path: path, query: query.replacingOccurrences(of: "&since=2", with: ""), now: 10) == .badSignature)
        // One changed character of the signature; another tenant's (or a rotated) secret.
        let sig = try #require(query.split(separator: "&").last?.dropFirst(4))
        for index in [0, 20, 42] {
            var characters = Array(sig)
            characters[index] = characters[index] == "A" ? "B" : "A"
            let verdict = signer.verify(method: "GET", path: path, query: query.replacingOccurrences(of: String(sig), with: String(characters)), now: 10)
            #expect(verdict == .badSignature || verdict == .malformed("the link has no valid 'sig'"))
        }
        let rotated = try DeviceLinkSigner(secret: DeviceLinkSigner.generateSecret())
        #expect(rotated.verify(method: "GET", path: path, query: query, now: 10) == .badSignature)
        // An expired link altered is a bad signature, never "expired": only genuine links say so.
        #expect(signer.verify(method: "GET", path: "/v1/packs/43/versions/3/export", query: query, now: 5_000) == .badSignature)
    }

    @Test func refusesMalformedLinks() throws {
        let signer = try DeviceLinkSigner(secret: Self.secret)
        let path = "/v1/packs/42/updates"
        let query = try signer.signedQuery(path: path, expires: 1_000)
        let malformed: [(String, String, String)] = [
            ("POST", path, query),
            ("GET", path, query + "&format=pmtiles&format=mbtiles"),
            ("GET", path, query + "&access_token=x"),
            ("GET", path, query + "&sig=abc"),
            ("GET", path, "sig=abc"),
            ("GET", path, ""),
            ("GET", path, query.replacingOccurrences(of: "expires=1000", with: "expires=-5")),
            ("GET", path, query.replacingOccurrences(of: "expires=1000", with: "expires=1e3")),
            ("GET", path, query + "&format=a%2Fb"),
            ("GET", path, query + "&flag"),
            ("GET", "/v1/packs/42/up dates", query),
            ("GET", "v1/packs/42/updates", query),
        ]
        for (method, path, query) in malformed {
            guard case .malformed = signer.verify(method: method, path: path, query: query, now: 10) else {
                Issue.record("\(method) \(path)?\(query) was not refused as malformed")
                continue
            }
        }
    }

    @Test func aValidLinkMakesAReaderOfItsPackOnly() {
        let principal = Principal.deviceLink(tenant: TenantID("acme")!, pack: PackID(42)!, signature: "FKsI29fFX_ZI35zKswkH3a31GQQ-LNOL0wIWq23Wm1k")
        #expect(principal.role == .read && principal.actor == .deviceLink(pack: PackID(42)!) && principal.tenant == TenantID("acme"))
        #expect(principal.mayReach(pack: PackID(42)!) && !principal.mayReach(pack: PackID(43)!) && !principal.allows(.write))
        #expect(principal.rateLimitKey.hasPrefix("link:42:") && !principal.rateLimitKey.contains("FKsI29"))
        #expect(principal.rateLimitKey != Principal.deviceLink(tenant: .default, pack: PackID(42)!, signature: "other").rateLimitKey)
    }

    @Test func signingRefusesWhatCouldNotBeVerified() throws {
        let signer = try DeviceLinkSigner(secret: Self.secret)
        #expect(throws: DeviceLinkError.path) { try signer.signedQuery(path: "/v1/packs/ü", expires: 1) }
        #expect(throws: DeviceLinkError.unexpectedParameter("from")) { try signer.signedQuery(path: "/a", parameters: ["from": "1"], expires: 1) }
        #expect(throws: DeviceLinkError.value("format")) { try signer.signedQuery(path: "/a", parameters: ["format": "a b"], expires: 1) }
        #expect(throws: CryptographyError.invalidKeyLength(algorithm: "device-link HMAC-SHA256", expected: 32, actual: 16)) {
            try DeviceLinkSigner(secret: [UInt8](repeating: 1, count: 16))
        }
        var dumped = ""
        dump(signer, to: &dumped)
        #expect(!"\(signer) \(dumped)".contains("7, 7"))
    }
}
