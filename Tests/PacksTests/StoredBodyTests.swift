import CZlib
import PackdTestSupport
import Packs
import Testing
@testable import Packs

let sampleJSON = Array((0..<400).map { "{\"layer\":\"roads\",\"id\":\($0),\"kind\":\"motorway\"}," }.joined().utf8)

@Suite struct StoredBodyTests {
    @Test func compressibleBodyIsStoredAsZlibWhenSmaller() throws {
        let body = try StoredBody.encoding(sampleJSON)
        #expect(body.compressed)
        #expect(body.storedSize < sampleJSON.count / 3)
        #expect(body.data.first == 0x78) // a zlib stream, what MapLibre's decompress reads
        #expect(try body.decoded() == sampleJSON)
    }

    @Test func incompressibleAndImageBodiesAreStoredRaw() throws {
        let random = randomBytes(count: 20 * 1024, seed: 1)
        let stored = try StoredBody.encoding(random)
        #expect(stored == StoredBody(data: random, compressed: false))

        // A PNG whose payload is highly compressible is still not deflated: the format is.
        let png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + [UInt8](repeating: 0, count: 4096)
        #expect(try StoredBody.encoding(png) == StoredBody(data: png, compressed: false))
        let tiny: [UInt8] = [1, 2, 3]
        #expect(try StoredBody.encoding(tiny) == StoredBody(data: tiny, compressed: false))
    }

    @Test func entropyProbeSkipsDeflateOnlyForRandomLookingBodies() {
        randomBytes(count: 20 * 1024, seed: 9).withUnsafeBytes { #expect(StoredBody.looksIncompressible($0)) }
        sampleJSON.withUnsafeBytes { #expect(!StoredBody.looksIncompressible($0)) }
        // Half random, half text: compressible enough to be worth deflating.
        (Array(randomBytes(count: 1024, seed: 3)) + Array(sampleJSON.prefix(1024))).withUnsafeBytes {
            #expect(!StoredBody.looksIncompressible($0))
        }
        randomBytes(count: 512, seed: 4).withUnsafeBytes { #expect(!StoredBody.looksIncompressible($0)) } // too small to judge
    }

    @Test func gzipBodyIsRewrappedWithoutRecompressing() throws {
        let gz = gzip(sampleJSON)
        let body = try StoredBody.encoding(gz)
        #expect(body.compressed)
        // Same deflate bytes: zlib header (2) + gzip's deflate payload + Adler-32 (4).
        #expect(Array(body.data[2..<(body.data.count - 4)]) == Array(gz[10..<(gz.count - 8)]))
        #expect(try body.decoded() == sampleJSON)
        // zlib's own uncompress accepts it: header check and Adler-32 are right.
        var output = [UInt8](repeating: 0, count: sampleJSON.count)
        var length = uLongf(output.count)
        let status = uncompress(&output, &length, body.data, uLong(body.data.count))
        #expect(status == Z_OK)
        #expect(Int(length) == sampleJSON.count)
    }

    @Test func truncatedOrCorruptGzipIsRejected() throws {
        let gz = gzip(sampleJSON)
        for cut in [3, 12, gz.count / 2, gz.count - 4, gz.count - 1] {
            #expect(throws: ZlibCodec.Failure.truncated) { try StoredBody.encoding(Array(gz[0..<cut])) }
        }
        var badCRC = gz
        badCRC[gz.count - 6] ^= 0xFF
        #expect(throws: ZlibCodec.Failure.truncated) { try StoredBody.encoding(badCRC) }
        var badData = gz
        badData[20] ^= 0xFF
        #expect(throws: ZlibCodec.Failure.self) { try StoredBody.encoding(badData) }
    }

    @Test func concatenatedGzipMembersAreInflatedAndStoredWhole() throws {
        let first = Array(sampleJSON.prefix(5000))
        let second = Array(sampleJSON.suffix(3000))
        let body = try StoredBody.encoding(gzip(first) + gzip(second))
        #expect(try body.decoded() == first + second)
        // A cut second member is still a truncated download.
        let cut = gzip(first) + gzip(second).dropLast(5)
        #expect(throws: ZlibCodec.Failure.truncated) { try StoredBody.encoding(Array(cut)) }
        #expect(throws: ZlibCodec.Failure.self) { try StoredBody.encoding(gzip(first) + [1, 2, 3, 4, 5, 6, 7, 8, 9]) }
    }

    @Test func inflateIsBoundedAgainstBombs() throws {
        let bomb = gzip([UInt8](repeating: 0, count: 4 << 20), level: Z_DEFAULT_COMPRESSION)
        #expect(bomb.count < 10_000)
        #expect(throws: ZlibCodec.Failure.tooLarge(limit: 1 << 20)) {
            try StoredBody.encoding(bomb, inflateLimit: 1 << 20)
        }
    }
}
