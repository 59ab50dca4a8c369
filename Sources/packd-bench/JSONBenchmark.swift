import ArgumentParser
import Foundation
import Packs

/// Encoding a pack document — what `GET /v1/packs/{id}` does on a cache miss and every
/// `progress` event does — through the wire types (`SortedJSONEncoder`), beside the path it
/// replaced (a `[String: Any]` of the same document through `SortedJSONWriter`) and Foundation's
/// `JSONEncoder` with sorted keys, in the same run. The first two must write the same bytes.
struct JSONBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "json",
        abstract: "Pack document encoding: Codable wire types through SortedJSONEncoder beside the [String: Any] writer they replaced and JSONEncoder(.sortedKeys)."
    )

    @Option(help: "Documents encoded per measurement.")
    var documents = 20_000

    @Option(help: "Repetitions of each measurement; the best is reported.")
    var repetitions = 5

    @Option(help: "Positions of the region's geometry (0: a bounding box region).")
    var positions = 0

    func run() throws {
        let pack = Self.pack(positions: positions)
        let dictionary = Self.dictionary(pack)
        let codable = try SortedJSONEncoder.encode(pack)
        let written = SortedJSONWriter.encode(dictionary)
        guard codable == written else {
            throw ValidationError("the two paths wrote different bytes:\n\(String(decoding: codable, as: UTF8.self))\n\(String(decoding: written, as: UTF8.self))")
        }
        let foundation = JSONEncoder()
        foundation.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        var sink = 0
        let new = best { for _ in 0..<documents { sink &+= ((try? SortedJSONEncoder.encode(pack))?.count ?? 0) } }
        let old = best { for _ in 0..<documents { sink &+= SortedJSONWriter.encode(Self.dictionary(pack)).count } }
        let oldEncodeOnly = best { for _ in 0..<documents { sink &+= SortedJSONWriter.encode(dictionary).count } }
        let json = best { for _ in 0..<documents { sink &+= ((try? foundation.encode(pack))?.count ?? 0) } }
        let perDocument = { (seconds: Double) in String(format: "%.2f µs", seconds / Double(documents) * 1e6) }
        print("pack document, \(codable.count) bytes (\(positions == 0 ? "bounds" : "\(positions)-position geometry") region), \(documents) encodes, best of \(repetitions):")
        print("  wire types -> SortedJSONEncoder   \(perDocument(new)) a document")
        print("  [String: Any] -> SortedJSONWriter \(perDocument(old)) (building the dictionary included; \(perDocument(oldEncodeOnly)) writing only)")
        print("  wire types -> JSONEncoder sorted  \(perDocument(json))")
        print(String(format: "  ratio new/old %.2f, JSONEncoder/new %.2f; identical bytes: yes (sink %d)", new / old, json / new, sink & 1))
    }

    private func best(_ body: () -> Void) -> Double {
        bestSeconds(of: repetitions, body)
    }

    /// A downloading pack as the API shows it.
    static func pack(positions: Int) -> Pack {
        var region = Region(styleURL: "https://tiles.example.org/styles/basic/style.json", minZoom: 0, maxZoom: 14, pixelRatio: 1,
                            includeIdeographs: false)
        if positions > 0 {
            let ring = (0...positions).map { index -> JSONValue in
                let angle = Double(index % positions) / Double(positions) * 2 * .pi
                return .array([.number(10 + 2 * cos(angle)), .number(50 + sin(angle))])
            }
            region.geometry = .object(["type": .string("Polygon"), "coordinates": .array([.array(ring)])])
        } else {
            region.bounds = [-11.5, 35.25, 20.75, 60.0]
        }
        return Pack(id: 42, name: "Western Europe z0-14", region: region, context: Base64Bytes(Array("device-7431".utf8)),
                    state: .active, createdAt: Timestamp(1_795_464_000), updatedAt: Timestamp(1_795_464_061), completedAt: nil,
                    progress: PackProgress(completedResources: 120_000, completedBytes: 1_850_000_000, completedTiles: 119_950,
                                           completedTileBytes: 1_800_000_000, expectedResources: 529_000, expectedIsPrecise: true,
                                           failedResources: 3, bytesPerSecond: 9_500_000, etaSeconds: 171),
                    limits: PackLimits(maxTiles: 600_000), error: nil, updateAvailable: nil, invalidation: nil)
    }

    /// The same document as the API built it before the wire types: `[String: Any]`.
    static func dictionary(_ pack: Pack) -> [String: Any] {
        var region: [String: Any] = [:]
        if let value = pack.region.styleURL { region["style_url"] = value }
        if let value = pack.region.bounds { region["bounds"] = value }
        if let value = pack.region.geometry { region["geometry"] = value.foundationObject }
        if let value = pack.region.minZoom { region["min_zoom"] = value }
        if let value = pack.region.maxZoom { region["max_zoom"] = value }
        if let value = pack.region.pixelRatio { region["pixel_ratio"] = value }
        if let value = pack.region.includeIdeographs { region["include_ideographs"] = value }
        let progress = pack.progress
        return [
            "id": pack.id,
            "name": pack.name.map { $0 as Any } ?? NSNull(),
            "region": region,
            "context": pack.context.map { Data($0.bytes).base64EncodedString() as Any } ?? NSNull(),
            "state": pack.state.rawValue,
            "created_at": pack.createdAt.rfc3339,
            "updated_at": pack.updatedAt.rfc3339,
            "completed_at": pack.completedAt.map { $0.rfc3339 as Any } ?? NSNull(),
            "progress": [
                "completed_resources": progress.completedResources, "completed_bytes": progress.completedBytes,
                "completed_tiles": progress.completedTiles, "completed_tile_bytes": progress.completedTileBytes,
                "expected_resources": progress.expectedResources, "expected_is_precise": progress.expectedIsPrecise,
                "failed_resources": progress.failedResources,
                "bytes_per_second": progress.bytesPerSecond.map { $0 as Any } ?? NSNull(),
                "eta_seconds": progress.etaSeconds.map { $0 as Any } ?? NSNull(),
            ] as [String: Any],
            "limits": ["max_tiles": pack.limits.maxTiles.map { $0 as Any } ?? NSNull(),
                       "max_bytes_per_second": pack.limits.maxBytesPerSecond.map { $0 as Any } ?? NSNull()],
            "error": NSNull(),
            "update_available": NSNull(),
            "invalidation": NSNull(),
        ]
    }
}
