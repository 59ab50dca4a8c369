import Packs
import Testing
@testable import Packs

/// Every (state, event) pair of `PackLifecycle`, the illegal ones included: each either moves
/// the pack as the table says, with exactly these actions, or is refused with a reason — never a
/// silent change.
@Suite struct PackLifecycleTests {
    typealias Event = PackLifecycle.Event
    typealias Action = PackLifecycle.Action

    static let counts = ExpectedCounts(resources: 120, tiles: 100, precise: true)
    static let failure = PackError(.styleUnavailable, "HTTP 500", url: "https://example/style.json", status: 500)

    /// One representative of every event kind.
    static let events: [Event] = [
        .create(start: true), .create(start: false), .importPack(.complete), .importPack(.inactive), .restart, .start,
        .suspend, .resume, .planKnown(counts, maxTiles: nil), .planKnown(counts, maxTiles: 99), .batchCommitted,
        .finished(failedResources: 0), .finished(failedResources: 3), .fail(failure), .invalidate, .delete,
    ]

    /// What the rules say for each pair: the new state and actions, or nil for a refusal.
    static func expected(_ state: PackState?, _ event: Event) -> (to: PackState?, error: PackError?, actions: [Action])? {
        let fail: (PackError, [Action]) -> (PackState?, PackError?, [Action]) = { error, before in
            (.failed, error, before + [.stopTransfers, .publishState]
                + (error.code == .tileLimitExceeded ? [.publishTileLimitExceeded] : []))
        }
        guard let state else {
            switch event {
            case .create(true): return (.queued, nil, [.publishState, .enqueue])
            case .create(false): return (.inactive, nil, [.publishState])
            case .importPack(let imported):
                // A pack arriving complete has its first version.
                return (imported, nil, (imported == .complete ? [.recordVersion] : []) + [.publishState, .publishProgress])
            default: return nil
            }
        }
        switch (event, state) {
        case (.create, _), (.importPack, _): return nil
        case (.restart, .active): return (.queued, nil, [.enqueue])
        case (.restart, .queued): return (.queued, nil, [.enqueue])
        case (.restart, _): return nil
        case (.start, .queued): return (.active, nil, [.publishState])
        case (.start, _): return nil
        case (.suspend, .queued), (.suspend, .active): return (.inactive, nil, [.stopTransfers, .publishState])
        case (.suspend, _): return (state, nil, [])
        case (.resume, .inactive): return (.queued, nil, [.publishState, .enqueue])
        case (.resume, .failed): return (.queued, nil, [.clearFailures, .publishState, .enqueue])
        case (.resume, _): return (state, nil, [])
        case (.planKnown(let counts, nil), .active): return (.active, nil, [.storeExpected(counts)])
        case (.planKnown(let counts, let limit?), .active):
            return fail(PackError(.tileLimitExceeded, "the region needs \(counts.tiles) tiles, the pack's limit is \(limit)"),
                        [.storeExpected(counts)])
        case (.planKnown, _): return nil
        case (.batchCommitted, _): return (state, nil, [.publishProgress])
        case (.finished(0), .active): return (.complete, nil, [.recordVersion, .stopTransfers, .publishState])
        case (.finished(let failed), .active):
            return fail(PackError(.resourcesFailed, "\(failed) resources failed after retries; resume retries them"), [])
        case (.finished, _): return nil
        case (.fail(let error), .queued), (.fail(let error), .active): return fail(error, [])
        case (.fail, _): return nil
        case (.invalidate, .complete): return (.queued, nil, [.restartRevalidation, .publishState, .enqueue])
        case (.invalidate, _): return nil
        case (.delete, _): return (nil, nil, [.stopTransfers, .removeRows, .publishRemoved])
        }
    }

    static let states: [PackState?] = [nil] + PackState.allCases.map(Optional.some)

    @Test(arguments: states)
    func everyEventFromEveryState(_ state: PackState?) {
        for event in Self.events {
            let result = PackLifecycle.transition(from: state, on: event)
            switch (result, Self.expected(state, event)) {
            case (.success(let transition), let wanted?):
                #expect(transition.from == state, "\(state.map(\.rawValue) ?? "new") + \(event)")
                #expect(transition.to == wanted.to, "\(state.map(\.rawValue) ?? "new") + \(event)")
                #expect(transition.error == wanted.error, "\(state.map(\.rawValue) ?? "new") + \(event)")
                #expect(transition.actions == wanted.actions, "\(state.map(\.rawValue) ?? "new") + \(event)")
            case (.failure(let refusal), nil):
                #expect(refusal.state == state && refusal.event == event)
                #expect(!refusal.reason.isEmpty)
            case (.success(let transition), nil):
                Issue.record("\(state.map(\.rawValue) ?? "new") + \(event) must be refused, moved to \(String(describing: transition.to))")
            case (.failure(let refusal), _?):
                Issue.record("\(state.map(\.rawValue) ?? "new") + \(event) must be allowed, refused: \(refusal)")
            }
        }
    }

    @Test func crashRecoveryRequeuesAnActivePackWithoutAStateEvent() throws {
        // A restarted server finds the pack `active` with nothing running: it goes back to the
        // queue and `start` then announces `active` again.
        let restart = try PackLifecycle.transition(from: .active, on: .restart).get()
        #expect(restart.to == .queued && restart.loopActions == [.enqueue])
        let start = try PackLifecycle.transition(from: restart.to, on: .start).get()
        #expect(start.to == .active && start.actions == [.publishState])
    }

    @Test func resumingAFailedPackForgetsItsFailuresSoOnlyWhatIsMissingIsRetried() throws {
        let resume = try PackLifecycle.transition(from: .failed, on: .resume).get()
        #expect(resume.to == .queued && resume.error == nil)
        #expect(resume.storageActions == [.clearFailures])
        #expect(resume.loopActions == [.publishState, .enqueue])
    }

    @Test func refusalsSayWhatIsWrong() {
        guard case .failure(let refusal) = PackLifecycle.transition(from: .active, on: .invalidate) else {
            Issue.record("revalidating an active pack must be refused")
            return
        }
        #expect(refusal.description == "the pack is active; only a complete pack can be revalidated (resume it, or wait until it is complete)")
        guard case .failure(let gone) = PackLifecycle.transition(from: nil, on: .suspend) else {
            Issue.record("a pack that does not exist cannot be suspended")
            return
        }
        #expect(gone.description == "there is no such pack")
    }

    @Test func storageAndLoopActionsPartitionEveryTransition() throws {
        for state in Self.states {
            for event in Self.events {
                guard case .success(let transition) = PackLifecycle.transition(from: state, on: event) else { continue }
                #expect(transition.storageActions + transition.loopActions == transition.actions.filter(\.isStorageAction)
                    + transition.actions.filter { !$0.isStorageAction })
                #expect(Set(transition.storageActions.map(String.init(describing:))).isDisjoint(
                    with: transition.loopActions.map(String.init(describing:))))
            }
        }
    }
}
