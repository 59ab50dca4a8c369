import Events
import Foundation
import Packs
import Plan

/// A pack as the API shows it (openapi.yaml's `Pack`), built from the stored row and progress.
/// The bytes are encoded once with sorted keys, so the ETag derived from them is stable and
/// changes whenever any field does.
struct PackDocument: Sendable {
    let packID: Int64
    let state: PackState
    let body: [UInt8]

    /// `rate` is the loop's rolling rate for the pack and `transfers` what the fetcher does for
    /// it; both show only while the pack is `active`.
    init(pack: PackRecord, progress: StoredProgress, rate: RollingRate? = nil, transfers: PackTransferStatus? = nil) {
        packID = pack.id
        state = pack.state
        body = JSONBody.encode(Self.pack(pack, progress: progress, rate: rate, transfers: transfers))
    }

    /// A strong tag of the representation: a client polling with `If-None-Match` gets `304`
    /// until state, progress or any other field changes.
    var etag: String { Self.etag(of: body) }

    static func etag(of body: [UInt8]) -> String {
        // Hex by table: String(format:) per byte was a tenth of serving GET /v1/packs/{id}.
        let digits = Array("0123456789abcdef".utf8)
        var tag: [UInt8] = [UInt8(ascii: "\"")]
        for byte in SHA256.hash(body).prefix(12) { tag += [digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]] }
        return String(decoding: tag + [UInt8(ascii: "\"")], as: UTF8.self)
    }

    /// The wire value of a stored pack.
    static func pack(_ pack: PackRecord, progress: StoredProgress, rate: RollingRate? = nil,
                     transfers: PackTransferStatus? = nil) -> Pack {
        let active = pack.state == .active
        return Pack(id: pack.id, name: pack.name.isEmpty ? nil : pack.name, region: region(pack.definition),
             context: pack.context.map(Base64Bytes.init), state: pack.state, createdAt: Timestamp(pack.createdAt),
             updatedAt: Timestamp(pack.updatedAt), completedAt: pack.completedAt.map(Timestamp.init),
             progress: PackProgress(progress, expected: pack.expected, rate: active ? rate : nil,
                                    transfers: active ? transfers : nil),
             limits: pack.limits, error: pack.error, updateAvailable: pack.updateCheckedAt == nil ? nil : pack.updateAvailable,
             invalidation: pack.invalidation.map(InvalidationResult.init), version: pack.version,
             refresh: pack.refreshEvery.map(PackRefresh.init), nextRefreshAt: pack.nextRefreshAt.map(Timestamp.init),
             startArea: pack.startArea, startAreaReadyAt: pack.startAreaReadyAt.map(Timestamp.init),
             skippedGlyphRanges: pack.skippedGlyphRanges)
    }

    /// The region in the API's normalised form; the stored MapLibre definition is the source
    /// (one that does not decode shows as `{}`: imports refuse such definitions).
    static func region(_ definition: String) -> Region {
        (try? RegionDefinition.normalisedRegion(stored: definition)) ?? Region()
    }
}
