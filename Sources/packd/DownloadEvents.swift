import API
import Jobs
import Store

/// Connects the scheduler to the API both ways: the API's pack hooks drive the scheduler, the
/// scheduler's committed state changes and progress become events (Jobs does not import API).
struct DownloadEvents {
    let api: PackdAPI

    func connect(_ scheduler: PackScheduler, updates: PackUpdateChecker) {
        api.packs.onPackQueued = { [unowned scheduler] in scheduler.packQueued($0) }
        api.packs.onPackSuspended = { [unowned scheduler] in scheduler.packSuspended($0) }
        api.packs.onPackRemoved = { [unowned scheduler] in scheduler.packRemoved($0) }
        let api = api
        scheduler.onStateChange = { packID, state, previous, error in
            api.packs.publishState(packID, state: state, previous: previous, error: error)
        }
        scheduler.onProgress = { packID, progress, expected in
            api.packs.publishProgress(packID, progress: progress, expected: expected)
        }
        scheduler.observer.resourceFailed = { failure in
            api.packs.publishResourceError(failure.packID, url: failure.url, status: failure.status, error: failure.error,
                                           attempt: failure.attempt, willRetry: failure.willRetry)
        }
        scheduler.onInvalidation = { packID, invalidation, progress, expected in
            api.maintenance.publishInvalidation(packID, invalidation, progress: progress, expected: expected)
        }
        api.maintenance.checkUpdate = { packID, completion in
            updates.check(packID) { outcome in
                switch outcome {
                case .checked(let available): completion(.checked(updateAvailable: available))
                case .nothingToCompare: completion(.nothingToCompare)
                case .upstreamFailed(let url, let status, let detail):
                    completion(.upstreamFailed(url: url, status: status, detail: detail))
                case .storageFailed(let message): completion(.storageFailed(message))
                }
            }
        }
    }
}
