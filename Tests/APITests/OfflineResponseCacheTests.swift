import Glibc
import Packs
import Server
import Store
import Testing
@testable import API

/// The loop's cache of served offline resources stays within its bytes and age.
@Suite struct OfflineResponseCacheTests {
    func key(_ y: Int64, gzip: Bool = false) -> OfflineResponseCache.Key {
        .init(packID: 1, row: .tile(TileKey(urlTemplate: "https://t/{z}/{x}/{y}", z: 10, x: 1, y: y)), gzip: gzip)
    }

    @Test func staysWithinItsBytesEvictingTheOldestFirst() {
        let cache = OfflineResponseCache(maximumBytes: 10 * (1000 + 256), maximumEntryBytes: 2000)
        for y in 0..<25 {
            cache.insert(key(Int64(y)), headers: ["ETag": "\"\(y)\""], etag: "\"\(y)\"", modified: nil, body: Array(repeating: 1, count: 1000))
            #expect(cache.bytes <= cache.maximumBytes)
        }
        #expect(cache.entry(key(24))?.etag == "\"24\"")
        #expect(cache.entry(key(15))?.body?.count == 1000)
        #expect(cache.entry(key(14)) == nil, "the oldest entries went first")
        #expect(cache.entry(key(24, gzip: true)) == nil, "the gzip representation is its own entry")

        cache.insert(key(99), headers: [:], etag: "\"big\"", modified: nil, body: Array(repeating: 0, count: 2001))
        #expect(cache.entry(key(99)) == nil, "an entry over the per-entry limit is not kept")
        cache.insert(key(98), headers: [:], etag: "\"none\"", modified: nil, body: nil)
        #expect(cache.entry(key(98))?.body == nil)
        #expect(cache.entry(key(98))?.etag == "\"none\"", "no-content answers are kept too")
    }

    @Test func entriesExpire() {
        let cache = OfflineResponseCache(lifetime: .milliseconds(50))
        cache.insert(key(1), headers: [:], etag: "\"a\"", modified: nil, body: [1])
        #expect(cache.entry(key(1)) != nil)
        let deadline = ContinuousClock.now + .seconds(30)
        while cache.entry(key(1)) != nil && ContinuousClock.now < deadline { usleep(1000) }
        #expect(cache.entry(key(1)) == nil)
        #expect(cache.bytes == 0)
    }
}
