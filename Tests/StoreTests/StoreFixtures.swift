@testable import Store
import Packs
import PackdTestSupport

/// Small builders for store tests: packs, tile and resource writes with generated bodies.
enum StoreFixtures {
    static let template = "https://tiles.example/{z}/{x}/{y}.pbf"

    static func pack(_ name: String) -> PackRecord {
        PackRecord(name: name, state: .active,
                   definition: #"{"style_url":"https://example/style.json","bounds":[0,0,1,1],"min_zoom":0,"max_zoom":2,"pixel_ratio":1}"#)
    }

    static func tile(z: Int64, x: Int64, y: Int64, pack: Int64?, size: Int = 300, seed: UInt64 = 0,
                     template: String = template) throws -> ResourceWrite {
        let body = randomBytes(count: size, seed: seed ^ UInt64(z << 40 | x << 20 | y))
        return ResourceWrite(key: .tile(TileKey(urlTemplate: template, z: z, x: x, y: y)),
                             content: .body(try StoredBody.encoding(body)), packID: pack)
    }

    static func resource(_ url: String, kind: ResourceKind = .style, pack: Int64?, text: String) throws -> ResourceWrite {
        ResourceWrite(key: .resource(url: url, kind: kind), content: .body(try StoredBody.encoding(Array(text.utf8))), packID: pack)
    }
}
