import Foundation
import Plan
import Store

/// A pack as the API shows it (openapi.yaml's `Pack`), built from the stored row and progress.
/// The bytes are encoded once with sorted keys, so the ETag derived from them is stable and
/// changes whenever any field does.
struct PackDocument: Sendable {
    let packID: Int64
    let state: String
    let body: [UInt8]

    /// `rate` is the loop's rolling rate for the pack; it shows only while the pack is `active`.
    init(pack: PackRecord, progress: PackProgress, rate: RollingRate? = nil) {
        packID = pack.id
        state = pack.state
        body = JSONBody.encode(Self.object(pack: pack, progress: progress, rate: rate))
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

    static func object(pack: PackRecord, progress: PackProgress, rate: RollingRate? = nil) -> [String: Any] {
        [
            "id": pack.id,
            "name": pack.name.isEmpty ? NSNull() : pack.name as Any,
            "region": region(pack.definition),
            "context": pack.context.map { Data($0).base64EncodedString() as Any } ?? NSNull(),
            "state": pack.state,
            "created_at": timestamp(pack.createdAt),
            "updated_at": timestamp(pack.updatedAt),
            "completed_at": pack.completedAt.map { timestamp($0) as Any } ?? NSNull(),
            "progress": progressObject(progress, expectedResources: pack.expectedResources, precise: pack.expectedIsPrecise,
                                       rate: pack.state == "active" ? rate : nil),
            "limits": limits(pack.limitsJSON).jsonObject,
            "error": pack.errorJSON.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) } ?? NSNull(),
            "update_available": pack.updateCheckedAt == nil ? NSNull() : pack.updateAvailable as Any,
            "invalidation": pack.invalidation.map { invalidationObject($0) as Any } ?? NSNull(),
        ]
    }

    /// `rate`: `bytes_per_second` and `eta_seconds`, null when the pack is not downloading or the
    /// rate is not known yet.
    static func progressObject(_ progress: PackProgress, expectedResources: Int64, precise: Bool,
                               rate: RollingRate? = nil) -> [String: Any] {
        [
            "completed_resources": progress.completedResources,
            "completed_bytes": progress.completedBytes,
            "completed_tiles": progress.completedTiles,
            "completed_tile_bytes": progress.completedTileBytes,
            "expected_resources": max(expectedResources, 0),
            "expected_is_precise": precise,
            "failed_resources": progress.failedResources,
            "bytes_per_second": rate.map { $0.wholeBytesPerSecond as Any } ?? NSNull(),
            "eta_seconds": rate?.etaSeconds(completedResources: progress.completedResources, expectedResources: expectedResources,
                                            precise: precise).map { $0 as Any } ?? NSNull(),
        ]
    }

    /// openapi.yaml's `InvalidateResult`.
    static func invalidationObject(_ invalidation: PackInvalidation) -> [String: Any] {
        [
            "unchanged": invalidation.unchanged, "updated": invalidation.updated, "removed": invalidation.removed,
            "started_at": timestamp(invalidation.startedAt),
            "completed_at": invalidation.completedAt.map { timestamp($0) as Any } ?? NSNull(),
        ]
    }

    /// The region in the API's normalised form; the stored MapLibre definition is the source.
    static func region(_ definition: String) -> Any {
        NormalisedRegionCache.shared.region(definition, normalise: normalise)
    }

    private static func normalise(_ definition: String) -> Any {
        guard let json = try? JSONSerialization.jsonObject(with: Data(definition.utf8)),
              let region = try? RegionDefinition(mapLibreJSON: json) else { return [String: Any]() }
        return region.jsonObject
    }

    static func limits(_ json: String?) -> PackLimits {
        guard let json else { return PackLimits() }
        return (try? JSONDecoder().decode(PackLimits.self, from: Data(json.utf8))) ?? PackLimits()
    }

    /// RFC 3339 UTC (`2026-11-22T04:30:00Z`) of Unix seconds.
    static func timestamp(_ seconds: Int64) -> String {
        Date(timeIntervalSince1970: TimeInterval(seconds)).formatted(.iso8601)
    }
}
