import Packs
import Server

/// A pack's current and retained versions as the artifact routes need them (read from the
/// store: `PackRecord.version`, `PackVersionRepository.versions`), and whether a delta from an
/// older version can be built: from any retained version below the current one.
struct PackVersions: Equatable, Sendable {
    let current: Int64
    let retained: Set<Int64>

    init(current: Int64, retained: Set<Int64>) {
        self.current = current
        self.retained = retained
    }

    /// The pack's versions as `reader` holds them.
    init(_ record: PackRecord, reader: any PackVersionRepository) throws {
        self.init(current: record.version, retained: Set(try reader.versions(of: record.id).map(\.version)))
    }

    /// Whether `since=from` deltas to the current version can be built.
    func deltaAvailable(from: Int64) -> Bool { from >= 1 && from < current && retained.contains(from) }

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
        switch PackVersionStanding(version, current: current, retained: Array(retained)) {
        case .current: .current
        case .retained: .retained
        case .notRetained: .gone
        case .unknown: .unknown
        }
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
