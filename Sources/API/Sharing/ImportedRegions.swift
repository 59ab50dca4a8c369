import Foundation
import Packs
import Plan

/// The region definitions of a checked upload, decoded as packd will show and download them. A
/// definition that does not decode would show as `"region": {}` (which the Pack schema does not
/// allow) and could never be resumed, so such an upload is refused before anything is merged,
/// naming each unreadable region (`/regions/{id}/definition`, then the field inside it).
enum ImportedRegions {
    /// At most this many unreadable regions are named in one answer.
    static let maximumReported = 16

    /// Reads every definition of `upload` (pool thread).
    static func check(_ upload: any CheckedUpload) throws(ImportError) {
        var problems: [(pointer: String, detail: String)] = []
        var reported = 0
        try upload.forEachRegionDefinition { regionID, definition in
            guard reported < maximumReported, let found = Self.problems(definition) else { return }
            reported += 1
            problems += found.map { ("/regions/\(regionID)/definition\($0.pointer)", $0.detail) }
        }
        if !problems.isEmpty { throw .invalidRegions(problems) }
    }

    /// Why `definition` (MapLibre's region JSON) is not a region, pointers relative to it; nil
    /// when it is one.
    static func problems(_ definition: String) -> [RegionError.Problem]? {
        do {
            _ = try RegionDefinition(stored: definition)
            return nil
        } catch {
            return error.problems
        }
    }
}
