@testable import Access
import Packs
import Testing

@Suite struct VerifiedTokenCacheTests {
    func token(kid: String = "k1", until: Int64) -> VerifiedToken {
        VerifiedToken(principal: Principal(tenant: .default, role: .read, actor: .token(subject: "s"), rateLimitKey: "sub:s"),
                      acceptedUntil: until, kid: kid)
    }

    @Test func answersUntilAcceptanceEnds() {
        var cache = VerifiedTokenCache(capacity: 4)
        let digest = VerifiedTokenCache.Digest(of: "a.b.c")
        cache.insert(token(until: 100), for: digest)
        #expect(cache.lookup(digest, now: 99) != nil)
        #expect(cache.lookup(VerifiedTokenCache.Digest(of: "a.b.d"), now: 0) == nil)
        #expect(cache.lookup(digest, now: 100) == nil)
        #expect(cache.count == 0, "an expired entry is dropped when met")
    }

    @Test func staysWithinCapacityOldestFirst() {
        var cache = VerifiedTokenCache(capacity: 3)
        let digests = (0..<5).map { VerifiedTokenCache.Digest(of: "token-\($0)") }
        for digest in digests { cache.insert(token(until: 1_000), for: digest) }
        #expect(cache.count == 3)
        #expect(cache.lookup(digests[0], now: 0) == nil && cache.lookup(digests[1], now: 0) == nil)
        #expect(digests[2...].allSatisfy { cache.lookup($0, now: 0) != nil })
        // Inserted again, a token is new: it outlives those inserted before it.
        cache.insert(token(until: 1_000), for: digests[2])
        cache.insert(token(until: 1_000), for: VerifiedTokenCache.Digest(of: "token-5"))
        #expect(cache.lookup(digests[2], now: 0) != nil && cache.lookup(digests[3], now: 0) == nil)
    }

    @Test func memoryStaysBoundedWhileTokensExpireAndChurn() {
        var cache = VerifiedTokenCache(capacity: 100)
        for index in 0..<100_000 {
            let digest = VerifiedTokenCache.Digest(of: "token-\(index)")
            cache.insert(token(until: Int64(index + 10)), for: digest)
            // Most entries are met again once expired, and dropped then, before the cache fills.
            _ = cache.lookup(digest, now: Int64(index + 10))
            #expect(cache.positions <= 201)
        }
        #expect(cache.count <= 100)
    }

    @Test func forgetsTokensOfDroppedKeys() {
        var cache = VerifiedTokenCache(capacity: 10)
        let first = VerifiedTokenCache.Digest(of: "1"), second = VerifiedTokenCache.Digest(of: "2")
        cache.insert(token(kid: "old", until: 1_000), for: first)
        cache.insert(token(kid: "new", until: 1_000), for: second)
        cache.keepOnly(kids: ["new"])
        #expect(cache.lookup(first, now: 0) == nil && cache.lookup(second, now: 0) != nil)
    }
}
