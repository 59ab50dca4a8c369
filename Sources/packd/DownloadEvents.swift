import API
import Foundation
import Jobs
import Store

/// Connects the scheduler to the API both ways: the API's pack hooks drive the scheduler, the
/// scheduler's committed state changes and progress become events (Jobs does not import API).
struct DownloadEvents {
    let api: PackdAPI

    func connect(_ scheduler: PackScheduler) {
        api.packs.onPackQueued = { [unowned scheduler] in scheduler.packQueued($0) }
        api.packs.onPackSuspended = { [unowned scheduler] in scheduler.packSuspended($0) }
        api.packs.onPackRemoved = { [unowned scheduler] in scheduler.packRemoved($0) }
        let api = api
        scheduler.onStateChange = { packID, state, previous, errorJSON in
            api.packs.publishState(packID, state: state, previous: previous, errorJSON: errorJSON)
        }
        scheduler.onProgress = { packID, progress, expected in
            api.events.publish(.progress, packID: packID, payload: Self.progressPayload(packID, progress, expected))
        }
    }

    /// The `progress` event's data: `{"pack_id", "state", "progress": {...}}` (api.md, events).
    static func progressPayload(_ packID: Int64, _ progress: PackProgress, _ expected: ExpectedCounts?) -> [UInt8] {
        var counts: [String: Any] = [
            "completed_resources": progress.completedResources, "completed_bytes": progress.completedBytes,
            "completed_tiles": progress.completedTiles, "completed_tile_bytes": progress.completedTileBytes,
            "failed_resources": progress.failedResources,
        ]
        if let expected {
            counts["expected_resources"] = expected.resources
            counts["expected_is_precise"] = expected.precise
        }
        let object: [String: Any] = ["pack_id": packID, "state": "active", "progress": counts]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8))
    }
}
