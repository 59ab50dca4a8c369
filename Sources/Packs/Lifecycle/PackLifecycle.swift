/// The rules of a pack's life as a pure value: given the state a pack is in and what happened,
/// the state it moves to and what must be done about it — or a precise refusal. Nothing here
/// does I/O: a store applies a transition's storage actions in the same transaction that writes
/// the new state, and the loop side (scheduler, events) performs the rest. Every change of a
/// pack's state goes through `transition(from:on:)`, so the rules live in one place.
///
/// `from` is nil for a pack that does not exist yet (creation, import).
public enum PackLifecycle {
    /// What happened to a pack.
    public enum Event: Sendable, Equatable, CustomStringConvertible {
        /// `POST /v1/packs`: `start` queues it, otherwise it waits `inactive`.
        case create(start: Bool)
        /// An import added the pack in the state its rows justify (`complete` or `inactive`).
        case importPack(PackState)
        /// The server starts: a pack left `active` by a crash or a shutdown goes back to `queued`.
        case restart
        /// The scheduler gave the pack a download slot.
        case start
        /// `POST …/suspend`.
        case suspend
        /// `POST …/resume`: a failed pack retries only what is missing.
        case resume
        /// The style and TileJSONs are in: the exact expected counts, checked against the pack's
        /// own `max_tiles`.
        case planKnown(ExpectedCounts, maxTiles: Int64?)
        /// The writer committed rows of the pack.
        case batchCommitted
        /// Every resource is resolved and committed; `failedResources` of them failed after retries.
        case finished(failedResources: Int64)
        /// The download (or revalidation) cannot go on.
        case fail(PackError)
        /// `POST …/invalidate`: revalidate a complete pack.
        case invalidate
        /// `DELETE /v1/packs/{id}` (or a storage reset).
        case delete

        public var description: String {
            switch self {
            case .create(let start): "create(start: \(start))"
            case .importPack(let state): "import(\(state))"
            case .restart: "restart"
            case .start: "start"
            case .suspend: "suspend"
            case .resume: "resume"
            case .planKnown(let counts, let maxTiles):
                "plan known (\(counts.tiles) tiles\(maxTiles.map { ", limit \($0)" } ?? ""))"
            case .batchCommitted: "batch committed"
            case .finished(let failed): "finished (\(failed) failed)"
            case .fail(let error): "fail(\(error.code.rawValue))"
            case .invalidate: "invalidate"
            case .delete: "delete"
            }
        }
    }

    /// What must be done because of a transition. The store performs the storage actions inside
    /// the transaction that records the new state (`isStorageAction`); the loop side performs
    /// the others once that transaction committed.
    public enum Action: Sendable, Equatable {
        // Storage (in the transition's transaction).
        /// Forget the recorded failures and `failed_resources` (a resume retries them).
        case clearFailures
        /// Zero the revalidation counts and start them now (`invalidate`).
        case restartRevalidation
        /// Store the exact expected counts.
        case storeExpected(ExpectedCounts)
        /// Remove the pack's rows (links go; rows no other pack uses become ambient cache).
        case removeRows
        /// The pack is complete: cut its first version, or the next one if its content changed
        /// since the last (and the next of every other complete pack whose content changed).
        case recordVersion

        // Loop side (after the commit).
        /// The scheduler should pick the pack up.
        case enqueue
        /// Stop the pack's transfers and retries; its slot is free.
        case stopTransfers
        /// A `state` event (also the state-change log line).
        case publishState
        /// A `progress` event with what was committed.
        case publishProgress
        /// A `tile_limit_exceeded` event after the `state` event.
        case publishTileLimitExceeded
        /// A `pack_removed` event.
        case publishRemoved

        public var isStorageAction: Bool {
            switch self {
            case .clearFailures, .restartRevalidation, .storeExpected, .removeRows, .recordVersion: true
            default: false
            }
        }
    }

    /// A transition the rules allow. `to` is nil when the pack no longer exists (deleted).
    /// `from == to` with no state event is a legal no-op (suspending a suspended pack).
    public struct Transition: Sendable, Equatable {
        public let from: PackState?
        public let to: PackState?
        /// The pack's `error` after the transition: set when it fails, nil otherwise (a state
        /// change away from `failed` clears it).
        public let error: PackError?
        public let actions: [Action]
        /// The versions `recordVersion` cut, filled in by `record(_:in:now:)` (a `version_created`
        /// event each, on the loop side); empty from the pure rules.
        public internal(set) var createdVersions: [PackVersion] = []

        public init(from: PackState?, to: PackState?, error: PackError? = nil, actions: [Action]) {
            self.from = from
            self.to = to
            self.error = error
            self.actions = actions
        }

        /// Whether the pack's stored state (or error) changes.
        public var changesState: Bool { from != to || error != nil }
        public var storageActions: [Action] { actions.filter(\.isStorageAction) }
        public var loopActions: [Action] { actions.filter { !$0.isStorageAction } }
    }

    /// An event the rules do not allow in the pack's state: never applied, never silent.
    public struct Refusal: Error, Sendable, Equatable, CustomStringConvertible {
        public let state: PackState?
        public let event: Event
        public let reason: String

        public var description: String { reason }
    }

    /// The transition `event` causes from `state`, or why it cannot happen.
    public static func transition(from state: PackState?, on event: Event) -> Result<Transition, Refusal> {
        func refuse(_ reason: String) -> Result<Transition, Refusal> {
            .failure(Refusal(state: state, event: event, reason: reason))
        }
        func unchanged(_ actions: [Action] = []) -> Result<Transition, Refusal> {
            .success(Transition(from: state, to: state, actions: actions))
        }
        func move(to next: PackState, error: PackError? = nil, _ actions: [Action]) -> Result<Transition, Refusal> {
            .success(Transition(from: state, to: next, error: error, actions: actions))
        }
        func failure(_ error: PackError, _ before: [Action] = []) -> Result<Transition, Refusal> {
            var actions = before + [.stopTransfers, .publishState]
            if error.code == .tileLimitExceeded { actions.append(.publishTileLimitExceeded) }
            return move(to: .failed, error: error, actions)
        }

        // Creation and import: only for a pack that does not exist yet.
        switch event {
        case .create(let start):
            guard state == nil else { return refuse("the pack already exists") }
            return start ? move(to: .queued, [.publishState, .enqueue]) : move(to: .inactive, [.publishState])
        case .importPack(let imported):
            guard state == nil else { return refuse("the pack already exists") }
            guard imported == .complete || imported == .inactive else {
                return refuse("an imported pack is complete or inactive, not \(imported)")
            }
            return move(to: imported, imported == .complete ? [.recordVersion, .publishState, .publishProgress]
                                                            : [.publishState, .publishProgress])
        default:
            break
        }
        guard let state else { return refuse("there is no such pack") }

        switch (event, state) {
        case (.restart, .active):
            return move(to: .queued, [.enqueue])
        case (.restart, .queued):
            return unchanged([.enqueue])
        case (.restart, _):
            return refuse("only an active or queued pack continues after a restart; this one is \(state)")

        case (.start, .queued):
            return move(to: .active, [.publishState])
        case (.start, _):
            return refuse("only a queued pack can start downloading; this one is \(state)")

        case (.suspend, .queued), (.suspend, .active):
            return move(to: .inactive, [.stopTransfers, .publishState])
        case (.suspend, .inactive), (.suspend, .complete), (.suspend, .failed):
            return unchanged()

        case (.resume, .inactive):
            return move(to: .queued, [.publishState, .enqueue])
        case (.resume, .failed):
            return move(to: .queued, [.clearFailures, .publishState, .enqueue])
        case (.resume, .queued), (.resume, .active), (.resume, .complete):
            return unchanged()

        case (.planKnown(let counts, let maxTiles), .active):
            if let maxTiles, counts.tiles > maxTiles {
                return failure(PackError(.tileLimitExceeded,
                                         "the region needs \(counts.tiles) tiles, the pack's limit is \(maxTiles)"),
                               [.storeExpected(counts)])
            }
            return unchanged([.storeExpected(counts)])
        case (.planKnown, _):
            return refuse("the plan of a pack that is not downloading is not recorded; this one is \(state)")

        case (.batchCommitted, _):
            // Writes in flight when a pack was suspended commit after its state changed: their
            // progress is real and published with the state the pack is in.
            return unchanged([.publishProgress])

        case (.finished(let failed), .active):
            if failed > 0 {
                return failure(PackError(.resourcesFailed, "\(failed) resources failed after retries; resume retries them"))
            }
            return move(to: .complete, [.recordVersion, .stopTransfers, .publishState])
        case (.finished, _):
            return refuse("only an active pack can finish; this one is \(state)")

        case (.fail(let error), .queued), (.fail(let error), .active):
            return failure(error)
        case (.fail, _):
            return refuse("only a queued or active pack can fail; this one is \(state)")

        case (.invalidate, .complete):
            return move(to: .queued, [.restartRevalidation, .publishState, .enqueue])
        case (.invalidate, _):
            return refuse("the pack is \(state); only a complete pack can be revalidated (resume it, or wait until it is complete)")

        case (.delete, _):
            return .success(Transition(from: state, to: nil, actions: [.stopTransfers, .removeRows, .publishRemoved]))

        case (.create, _), (.importPack, _):
            preconditionFailure("handled above")
        }
    }
}
