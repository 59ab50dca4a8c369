import Artifacts
import Packs
import Server

/// How the artifact cache builds a key: on a store reader, off the loop, checking first that
/// the version asked for is still the pack's current one (a refresh may have moved it since
/// the request was checked), then writing the file with the Store's exporters. What the client
/// got wrong (no such source, a delta that cannot be built) is thrown as a `Problem`.
enum ArtifactBuild {
    static func using(_ store: any PackStore) -> ArtifactCache.Build {
        { key, temporaryPath, done in
            store.read({ reader in try run(key, to: temporaryPath, reader: reader) }, then: done)
        }
    }

    static func run(_ key: ArtifactKey, to path: String, reader: any StoreReading & PackExporting) throws {
        guard let record = try reader.pack(key.pack) else { throw PackRouteGroup.notFound(key.pack) }
        let versions = try PackVersions(record, reader: reader)
        guard versions.lookup(key.version) == .current else {
            throw versions.lookup(key.version) == .unknown
                ? PackVersions.unknown(pack: key.pack, version: key.version, current: versions.current)
                : PackVersions.gone(pack: key.pack, version: key.version, current: versions.current).0
        }
        if let since = key.since, !versions.deltaAvailable(from: since) {
            throw deltaUnavailable(pack: key.pack, since: since, to: key.version)
        }
        // The version's bytes, the same on every build and node; the store refuses precisely if
        // its rows moved on meanwhile (a refresh under way: `503` with `Retry-After`).
        let request = ExportRequest(format: key.format, source: key.source, since: key.since)
        switch try ExportJob.run(pack: key.pack, request: request, version: key.version, to: path, reader: reader) {
        case .written: return
        case .refused(let problem): throw problem
        }
    }

    static func deltaUnavailable(pack: Int64, since: Int64, to version: Int64) -> Problem {
        let detail = "pack \(pack) has no delta from version \(since) to version \(version); download the full artifact "
            + "(GET /v1/packs/\(pack)/updates?from=\(since) says which)"
        return Problem(.validationFailed, detail: detail, errors: [Problem.FieldError(parameter: "since", detail: detail)])
    }
}
