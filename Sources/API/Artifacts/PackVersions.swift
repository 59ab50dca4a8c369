import Packs
import Server

/// A pack's current and retained versions as the artifact routes need them, and whether a
/// delta from an older version can be built. Today's store has no version records: a `complete`
/// pack is version 1 (its only retained version) and any other is version 0, and no deltas
/// exist. This is the one place that changes when the store reads versions.
struct PackVersions: Equatable, Sendable {
    let current: Int64
    let retained: Set<Int64>

    init(current: Int64, retained: Set<Int64>) {
        self.current = current
        self.retained = retained
    }

    init(_ record: PackRecord) {
        self = record.state == .complete ? PackVersions(current: 1, retained: [1]) : PackVersions(current: 0, retained: [])
    }

    /// Whether every change of a pack's content makes a new version. Not yet: a refresh keeps
    /// version 1, so artifacts are dropped when a pack's content may change.
    static let versionsNumberContent = false

    /// Whether `since=from` deltas to the current version can be built.
    func deltaAvailable(from: Int64) -> Bool { false }

    enum Lookup: Equatable {
        /// The current version: its artifacts can be built.
        case current
        /// An older version still kept.
        case retained
        /// An older version no longer kept (`410`).
        case gone
        /// No such version (`404`): newer than the current one, or 0.
        case unknown
    }

    func lookup(_ version: Int64) -> Lookup {
        if version == current, version > 0 { return .current }
        if retained.contains(version) { return .retained }
        if version >= 1, version < current { return .gone }
        return .unknown
    }

    /// The `410` for a version no longer kept, naming the current one.
    static func gone(pack: Int64, version: Int64, current: Int64) -> (Problem, [String: Any]) {
        let problem = Problem(.gone, detail: "pack \(pack) no longer keeps version \(version); the current version is \(current)")
        return (problem, ["current_version": current])
    }

    static func unknown(pack: Int64, version: Int64, current: Int64) -> Problem {
        let detail = current == 0
            ? "pack \(pack) has no version yet: it has not completed"
            : "pack \(pack) has no version \(version); the current version is \(current)"
        return Problem(.notFound, detail: detail)
    }
}
