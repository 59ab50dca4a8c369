@testable import Artifacts
import Foundation
import Testing

/// The pure parts of artifacts: keys to names and back, eviction order, digests.
@Suite struct ArtifactNamingTests {
    static let digest = String(repeating: "0123456789abcdef", count: 4)

    @Test func publishedNamesCarryTheDigestAndOnlyMatchTheirKey() {
        let keys = [
            ArtifactKey(pack: 7, version: 3, format: .maplibre),
            ArtifactKey(pack: 7, version: 3, format: .maplibre, since: 1),
            ArtifactKey(pack: 7, version: 3, format: .mbtiles, source: "openmaptiles"),
            ArtifactKey(pack: 7, version: 3, format: .mbtiles, source: "https://x/{z}/{x}/{y}.png"),
            ArtifactKey(pack: 7, version: 3, format: .pmtiles, source: "openmaptiles"),
        ]
        for key in keys {
            let name = ArtifactFileName.published(key, sha256: Self.digest)
            #expect(!name.contains("/"))
            #expect(key.versionFolder == "pack-7/v3")
            for other in keys {
                #expect((ArtifactFileName.digest(in: name, of: other) == Self.digest) == (other == key), "\(name) as \(other)")
            }
        }
        let key = keys[0]
        #expect(ArtifactFileName.digest(in: "maplibre.\(Self.digest.uppercased()).db", of: key) == nil)
        #expect(ArtifactFileName.digest(in: "maplibre.\(Self.digest.dropLast()).db", of: key) == nil)
        #expect(ArtifactFileName.digest(in: ArtifactFileName.temporary(pid: 12, unique: "u"), of: key) == nil)
    }

    @Test func temporaryNamesNameTheirBuilder() {
        #expect(ArtifactFileName.builder(of: ArtifactFileName.temporary(pid: 4321, unique: "A-B")) == 4321)
        #expect(ArtifactFileName.builder(of: "maplibre.\(Self.digest).db") == nil)
        #expect(ArtifactFileName.builder(of: ".building-x-1") == nil)
        #expect(ArtifactFileName.version(ofFolder: "v12") == 12)
        #expect(ArtifactFileName.version(ofFolder: "v-1") == nil)
        #expect(ArtifactFileName.pack(ofFolder: "pack-9") == 9)
        #expect(ArtifactFileName.pack(ofFolder: "pack-0") == nil)
        #expect(ArtifactFileName.pack(ofFolder: "other") == nil)
    }

    @Test func evictionTakesTheLeastRecentlyUsedUntilTheBudgetHolds() {
        let entries = [
            ArtifactEviction.Entry(path: "a", size: 40, lastUsed: 3),
            ArtifactEviction.Entry(path: "b", size: 40, lastUsed: 1),
            ArtifactEviction.Entry(path: "c", size: 40, lastUsed: 2),
            ArtifactEviction.Entry(path: "d", size: 40, lastUsed: 4),
        ]
        #expect(ArtifactEviction.victims(entries, maximumBytes: 160, keep: []).isEmpty)
        #expect(ArtifactEviction.victims(entries, maximumBytes: 120, keep: []).map(\.path) == ["b"])
        #expect(ArtifactEviction.victims(entries, maximumBytes: 79, keep: []).map(\.path) == ["b", "c", "a"])
        #expect(ArtifactEviction.victims(entries, maximumBytes: 80, keep: ["b"]).map(\.path) == ["c", "a"])
        // What is kept may leave the directory over its budget: nothing else to take.
        #expect(ArtifactEviction.victims(entries, maximumBytes: 0, keep: ["a", "b", "c", "d"]).isEmpty)
    }

    @Test func digestsMatchKnownVectors() throws {
        #expect(Digest.hex(Digest.sha256(Array("abc".utf8))) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        let artifact = Artifact(key: ArtifactKey(pack: 1, version: 1, format: .maplibre), path: "/x", size: 3,
                                sha256: "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(artifact.etag == "\"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"")
        #expect(artifact.reprDigest == "sha-256=:ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=:")
        // A file hashed in blocks gives the one-shot digest.
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("digest-\(UUID().uuidString)").path
        defer { unlink(path) }
        var bytes = [UInt8](repeating: 0, count: 3 << 20 + 17)
        for index in bytes.indices { bytes[index] = UInt8(truncatingIfNeeded: index &* 31 &+ index >> 9) }
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let descriptor = open(path, O_RDONLY)
        defer { close(descriptor) }
        let hashed = try Digest.sha256(ofFile: descriptor)
        #expect(hashed.size == bytes.count)
        #expect(hashed.digest == Digest.sha256(bytes))
    }
}
