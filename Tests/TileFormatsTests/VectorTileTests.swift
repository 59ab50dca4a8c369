import PackdTestSupport
import Testing
@testable import TileFormats

/// `VectorTile`: every property value type, geometry types and ids decode as written; a tile that
/// is malformed or holds more than its limits is refused with a failure, never a trap.
@Suite struct VectorTileTests {
    static func sample() -> [UInt8] {
        var builder = VectorTileBuilder()
        builder.layer("places", [
            .init(id: 7, type: .point, properties: [("name", .string("Москва")), ("rank", .int(-3)), ("capital", .bool(true))]),
            .init(type: .polygon, properties: [("name", .string("Αθήνα")), ("population", .uint(664_046)), ("area", .double(38.964))]),
            .init(type: .lineString, properties: [("name", .string("القاهرة")), ("height", .float(1.5)), ("delta", .sint(-12))]),
            .init(type: .unknown, properties: []),
        ])
        builder.points("skipped", [[("name", .string("東京"))]])
        return builder.bytes
    }

    @Test func decodesEveryValueTypeAndGeometryType() throws {
        let tile = try VectorTile(decoding: Self.sample())
        #expect(tile.layers.map(\.name) == ["places", "skipped"])
        let layer = tile.layers[0]
        #expect(layer.extent == 4096)
        #expect(layer.features.map(\.type) == [.point, .polygon, .lineString, .unknown])
        #expect(layer.features[0].id == 7 && layer.features[1].id == nil)
        let name = try #require(layer.keyIndex("name"))
        #expect(layer.features.prefix(3).map { layer.value(keyIndex: name, of: $0) }
                == [.string("Москва"), .string("Αθήνα"), .string("القاهرة")])
        #expect(layer.value(keyIndex: name, of: layer.features[3]) == nil)
        let first = Dictionary(uniqueKeysWithValues: layer.properties(of: layer.features[0]).map { ($0.key, $0.value) })
        #expect(first == ["name": .string("Москва"), "rank": .int(-3), "capital": .bool(true)])
        let second = Dictionary(uniqueKeysWithValues: layer.properties(of: layer.features[1]).map { ($0.key, $0.value) })
        #expect(second["population"] == .uint(664_046) && second["area"] == .double(38.964))
        let third = Dictionary(uniqueKeysWithValues: layer.properties(of: layer.features[2]).map { ($0.key, $0.value) })
        #expect(third["height"] == .double(1.5) && third["delta"] == .int(-12))
        #expect(VectorTile.Value.uint(5).number == 5 && VectorTile.Value.string("5").number == nil)
    }

    @Test func layersNotWantedAreSkipped() throws {
        let tile = try VectorTile(decoding: Self.sample(), wanted: { $0 == "skipped" })
        #expect(tile.layers.map(\.name) == ["skipped"])
        #expect(tile.layers[0].features.count == 1)
    }

    @Test func sharedValuesShareTheirIndex() throws {
        var builder = VectorTileBuilder()
        builder.points("l", [[("class", .string("city"))], [("class", .string("town"))], [("class", .string("city"))]])
        let layer = try VectorTile(decoding: builder.bytes).layers[0]
        let key = try #require(layer.keyIndex("class"))
        let indices = layer.features.map { layer.valueIndex(keyIndex: key, of: $0) }
        #expect(indices == [0, 1, 0])
        #expect(layer.values.count == 2)
    }

    @Test func malformedTilesAreRefused() {
        let valid = Self.sample()
        // Truncated anywhere: a failure or a shorter decode, never a trap.
        for length in 0..<valid.count {
            _ = try? VectorTile(decoding: Array(valid.prefix(length)))
        }
        // A tag pointing past the values.
        var badTag: [UInt8] = []
        var layer: [UInt8] = [0x0A, 1, UInt8(ascii: "l")]
        let feature: [UInt8] = [0x12, 2, 0, 5]  // tags: key 0, value 5
        layer += [0x12, UInt8(feature.count)] + feature + [0x1A, 1, UInt8(ascii: "k")] + [0x22, 2, 0x38, 1]
        badTag += [0x1A, UInt8(layer.count)] + layer
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: badTag) }
        // An odd number of tag indices.
        var odd: [UInt8] = []
        var oddLayer: [UInt8] = [0x0A, 1, UInt8(ascii: "l")]
        let oddFeature: [UInt8] = [0x12, 1, 0]
        oddLayer += [0x12, UInt8(oddFeature.count)] + oddFeature + [0x1A, 1, UInt8(ascii: "k")] + [0x22, 2, 0x38, 1]
        odd += [0x1A, UInt8(oddLayer.count)] + oddLayer
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: odd) }
        // A layer without a name.
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: [0x1A, 2, 0x28, 1]) }
        // A value whose string field has a varint wire type.
        var wrong: [UInt8] = []
        let wrongLayer: [UInt8] = [0x0A, 1, UInt8(ascii: "l"), 0x22, 2, 0x08, 1]
        wrong += [0x1A, UInt8(wrongLayer.count)] + wrongLayer
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: wrong) }
    }

    @Test func limitsBoundWhatATileMayHold() throws {
        var builder = VectorTileBuilder()
        builder.points("many", (0..<50).map { [("n", .int(Int64($0)))] })
        var limits = VectorTile.Limits()
        limits.maximumFeaturesPerLayer = 49
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: builder.bytes, limits: limits) }
        limits = .init()
        limits.maximumValuesPerLayer = 10
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: builder.bytes, limits: limits) }
        limits = .init()
        limits.maximumTagsPerLayer = 20
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: builder.bytes, limits: limits) }
        limits = .init()
        limits.maximumLayers = 1
        var two = VectorTileBuilder()
        two.points("a", [[]])
        two.points("b", [[]])
        #expect(throws: ProtobufFailure.self) { try VectorTile(decoding: two.bytes, limits: limits) }
        #expect(try VectorTile(decoding: builder.bytes).layers[0].features.count == 50)
    }

    /// Random byte flips of a valid tile: each decodes or fails, and whatever decodes is
    /// consistent (every tag in range), as the fuzz target checks at length.
    @Test func mutatedTilesNeverTrap() throws {
        let valid = Self.sample()
        var generator = TileMutator(seed: 28)
        for _ in 0..<3_000 {
            var bytes = valid
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
            }
            guard let tile = try? VectorTile(decoding: bytes) else { continue }
            for layer in tile.layers {
                for feature in layer.features { _ = layer.properties(of: feature) }
            }
        }
    }
}

/// A small deterministic generator (Knuth's MMIX linear congruential step, high bits).
struct TileMutator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return state >> 17
    }
}
