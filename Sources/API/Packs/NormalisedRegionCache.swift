import Foundation
import Packs
import Plan

/// The API form of stored region definitions, computed once per distinct definition.
///
/// A pack's definition never changes after it is created, yet every `GET /v1/packs/{id}`, list
/// page and snapshot parsed it again (Foundation JSON parse plus `RegionDefinition`): about a
/// sixth of serving one pack under `packd-bench api`. Bounded by count and by the definitions'
/// bytes (a geometry region can be large): when full it starts over, so memory stays flat
/// however many packs are read. Thread-safe (pool threads read packs).
final class NormalisedRegionCache: @unchecked Sendable {
    static let shared = NormalisedRegionCache(capacity: 4096, maximumBytes: 8 << 20)

    private let capacity: Int
    private let maximumBytes: Int
    private let lock = NSLock()
    private var regions: [String: Region] = [:]
    private var bytes = 0

    init(capacity: Int, maximumBytes: Int) {
        self.capacity = max(1, capacity)
        self.maximumBytes = maximumBytes
    }

    /// `definition`'s normalised region, made by `normalise` on a miss.
    func region(_ definition: String, normalise: (String) -> Region) -> Region {
        if let cached = lock.withLock({ regions[definition] }) { return cached }
        let region = normalise(definition)
        let size = definition.utf8.count
        guard size <= maximumBytes / 16 else { return region }
        lock.withLock {
            if regions.count >= capacity || bytes + size > maximumBytes {
                regions.removeAll(keepingCapacity: true)
                bytes = 0
            }
            regions[definition] = region
            bytes += size
        }
        return region
    }
}
