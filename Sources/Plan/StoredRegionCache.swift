import Foundation
import Packs

extension RegionDefinition {
    /// Decodes a stored region definition — MapLibre's region JSON as a pack's `definition`
    /// column or an imported database's `regions` row holds it — once per distinct text: a
    /// pack's definition never changes after it is created, yet the scheduler, the pack
    /// documents, offline serving, exports and imports all read it. Text that is not JSON is a
    /// problem at the root, like any other.
    public init(stored definition: String) throws(RegionError) {
        self = try StoredRegionCache.shared.entry(definition).definition
    }

    /// The API's normalised form of a stored definition (what `GET /v1/packs/{id}` shows as
    /// `region`), from the same cache.
    public static func normalisedRegion(stored definition: String) throws(RegionError) -> Region {
        try StoredRegionCache.shared.entry(definition).region
    }
}

/// Stored region definitions, decoded and normalised once per distinct text.
///
/// Every `GET /v1/packs/{id}`, list page and snapshot used to parse the pack's definition again
/// (Foundation JSON parse plus `RegionDefinition`): about a sixth of serving one pack under
/// `packd-bench api`. Bounded by count and by the definitions' bytes (a geometry region can be
/// large): when full it starts over, so memory stays flat however many packs are read. What does
/// not decode is not kept (it is decoded, and refused, each time). Thread-safe (pool threads read
/// packs).
final class StoredRegionCache: @unchecked Sendable {
    struct Entry: Sendable {
        let definition: RegionDefinition
        let region: Region
    }

    static let shared = StoredRegionCache(capacity: 4096, maximumBytes: 8 << 20)

    private let capacity: Int
    private let maximumBytes: Int
    private let decode: @Sendable (String) throws(RegionError) -> Entry
    private let lock = NSLock()
    private var entries: [String: Entry] = [:]
    private var bytes = 0

    init(capacity: Int, maximumBytes: Int, decode: @escaping @Sendable (String) throws(RegionError) -> Entry = StoredRegionCache.decode) {
        self.capacity = max(1, capacity)
        self.maximumBytes = maximumBytes
        self.decode = decode
    }

    /// `definition` decoded, from memory when it was decoded before.
    func entry(_ definition: String) throws(RegionError) -> Entry {
        if let cached = lock.withLock({ entries[definition] }) { return cached }
        let entry = try decode(definition)
        let size = definition.utf8.count
        guard size <= maximumBytes / 16 else { return entry }
        lock.withLock {
            if entries.count >= capacity || bytes + size > maximumBytes {
                entries.removeAll(keepingCapacity: true)
                bytes = 0
            }
            entries[definition] = entry
            bytes += size
        }
        return entry
    }

    @Sendable static func decode(_ definition: String) throws(RegionError) -> Entry {
        guard let json = try? JSONSerialization.jsonObject(with: Data(definition.utf8)) else {
            throw RegionError([.init(pointer: "", detail: "not JSON: MapLibre stores a region definition as a JSON object")])
        }
        let region = try RegionDefinition(mapLibreJSON: json)
        return Entry(definition: region, region: region.region)
    }
}
