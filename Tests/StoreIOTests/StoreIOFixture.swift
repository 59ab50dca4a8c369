import CZlib
import Foundation
import Packs
@testable import Store
@testable import TileFormats

/// A temp directory with packd databases filled the way the writer fills them (schema by
/// `SchemaMigrator`, zlib `data` with `compressed = 1`), plus helpers to build vector tiles.
final class StoreIOFixture: @unchecked Sendable {
    let directory: String

    init() {
        directory = NSTemporaryDirectory() + "packd-store-io-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    func path(_ name: String) -> String { directory + "/" + name }

    func packdDatabase(_ name: String) throws -> Database {
        try SchemaMigrator.openWriter(path: path(name))
    }

    /// A region row (= pack id) with a definition and JSON description.
    @discardableResult
    func addRegion(_ database: Database, definition: String, name: String) throws -> Int64 {
        try database.execute("INSERT INTO regions (definition, description) VALUES (?1, ?2)",
                             [.text(definition), .blob(Array("{\"name\":\"\(name)\"}".utf8))])
        let id = database.lastInsertedRowID
        // The pack row exports read (name, version, the time of an unversioned export).
        try database.execute("""
            INSERT INTO packd_packs (region_id, name, state, created_at, updated_at) VALUES (?1, ?2, ?3, 1700000000, 1700000000)
            """, [.integer(id), .text(name), .text(PackState.inactive.rawValue)])
        return id
    }

    func addResource(_ database: Database, region: Int64, url: String, kind: Int64, body: [UInt8]?, modified: Int64?) throws {
        let (data, compressed) = body.map(Self.stored) ?? (nil, false)
        try database.execute("""
            INSERT INTO resources (url, kind, expires, modified, etag, data, compressed, accessed, must_revalidate)
            VALUES (?1, ?2, 2000000000, ?3, ?4, ?5, ?6, 1700000000, 0)
            """, [.text(url), .integer(kind), DatabaseValue(modified), .text("\"\(url.count)\""), DatabaseValue(data), DatabaseValue(compressed)])
        try database.execute("INSERT INTO region_resources (region_id, resource_id) VALUES (?1, ?2)",
                             [.integer(region), .integer(database.lastInsertedRowID)])
    }

    func addTile(_ database: Database, region: Int64?, template: String, z: Int64, x: Int64, y: Int64,
                 body: [UInt8]?, modified: Int64? = 1_700_000_000, pixelRatio: Int64 = 1) throws {
        let (data, compressed) = body.map(Self.stored) ?? (nil, false)
        try database.execute("""
            INSERT INTO tiles (url_template, pixel_ratio, z, x, y, expires, modified, etag, data, compressed, accessed, must_revalidate)
            VALUES (?1, ?2, ?3, ?4, ?5, NULL, ?6, NULL, ?7, ?8, 1700000000, 1)
            """, [.text(template), .integer(pixelRatio), .integer(z), .integer(x), .integer(y), DatabaseValue(modified),
                  DatabaseValue(data), DatabaseValue(compressed)])
        if let region {
            try database.execute("INSERT INTO region_tiles (region_id, tile_id) VALUES (?1, ?2)",
                                 [.integer(region), .integer(database.lastInsertedRowID)])
        }
    }

    /// MapLibre's storage rule: zlib when smaller, raw otherwise.
    static func stored(_ body: [UInt8]) -> ([UInt8], Bool) {
        let zlib = zlibCompress(body)
        return zlib.count < body.count ? (zlib, true) : (body, false)
    }

    static func zlibCompress(_ body: [UInt8]) -> [UInt8] {
        var length = compressBound(uLong(body.count))
        var output = [UInt8](repeating: 0, count: Int(length))
        _ = compress2(&output, &length, body, uLong(body.count), Z_DEFAULT_COMPRESSION)
        return Array(output[0..<Int(length)])
    }

    static func gunzip(_ bytes: [UInt8]) throws -> [UInt8] {
        try Inflater(.gzip).inflated(bytes, limit: 64 << 20)
    }

    /// A vector tile with the given layers; each layer has one point feature tagged with every
    /// field (string and number values), plus some filler geometry so tiles compress.
    static func vectorTile(layers: [(name: String, fields: [String])], salt: Int) -> [UInt8] {
        var tile = Protobuf()
        for layer in layers {
            var message = Protobuf()
            message.field(15, varint: 2)
            message.field(1, bytes: Array(layer.name.utf8))
            var feature = Protobuf()
            feature.field(1, varint: UInt64(salt))
            var tags = Protobuf()
            for index in layer.fields.indices { tags.varint(UInt64(index)); tags.varint(UInt64(index)) }
            feature.field(2, bytes: tags.bytes)
            feature.field(3, varint: 1)
            var geometry = Protobuf()
            geometry.varint(9)
            for step in 0..<200 { geometry.varint(UInt64((step * 7 + salt) % 50)) ; geometry.varint(UInt64(step % 13)) }
            feature.field(4, bytes: geometry.bytes)
            message.field(2, bytes: feature.bytes)
            for (index, field) in layer.fields.enumerated() {
                message.field(3, bytes: Array(field.utf8))
                var value = Protobuf()
                if index % 2 == 0 { value.field(1, bytes: Array("v\(salt)".utf8)) } else { value.field(4, varint: UInt64(salt)) }
                message.field(4, bytes: value.bytes)
            }
            message.field(5, varint: 4096)
            tile.field(3, bytes: message.bytes)
        }
        return tile.bytes
    }
}

/// A protobuf writer just large enough for test vector tiles.
struct Protobuf {
    var bytes: [UInt8] = []

    mutating func varint(_ value: UInt64) { Varint.append(value, to: &bytes) }

    mutating func field(_ number: UInt64, varint value: UInt64) {
        varint(number << 3)
        varint(value)
    }

    mutating func field(_ number: UInt64, bytes value: [UInt8]) {
        varint(number << 3 | 2)
        varint(UInt64(value.count))
        bytes += value
    }
}
