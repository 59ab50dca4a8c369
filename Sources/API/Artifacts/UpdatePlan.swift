import Artifacts
import Server

/// The query of `GET /v1/packs/{id}/updates`: the version the device holds (`from`, required),
/// the format it side-loads (`maplibre` unless told) and, for an archive format, the source.
struct UpdateQuery: Equatable {
    let from: Int64
    let format: ArtifactFormat
    let source: String?

    init(_ request: HTTPRequest) throws(Problem) {
        var from: Int64?
        var format = ArtifactFormat.maplibre
        var source: String?
        var seen: Set<String> = []
        for item in request.queryItems {
            guard seen.insert(item.name).inserted else {
                throw ExportRequest.invalid(item.name, "query parameter \(item.name) is given more than once")
            }
            switch item.name {
            case "from":
                guard let value = ExportRequest.version(item.value) else {
                    throw ExportRequest.invalid("from", "from must be the version the device holds: a whole number from 0")
                }
                from = value
            case "format":
                format = try ExportRequest.format(item.value)
            case "source":
                source = try ExportRequest.source(item.value)
            default:
                throw ExportRequest.invalid(item.name, "unknown query parameter \(item.name); expected from, format, source")
            }
        }
        guard let from else { throw ExportRequest.invalid("from", "from is required: the version the device holds (0 for none)") }
        try ExportRequest.checkSource(source, format: format)
        self.from = from
        self.format = format
        self.source = source
    }
}

/// What a device holding version `from` needs, before any file is looked at. Pure.
enum UpdatePlan: Equatable {
    /// It is current.
    case none
    /// The full artifact: `from` is 0, unknown, no longer kept, or no delta can be built.
    case full
    /// The delta from `since` when it is smaller than the full artifact, else the full one.
    case deltaIfSmaller(since: Int64)

    init(from: Int64, versions: PackVersions, format: ArtifactFormat) {
        if from == versions.current {
            self = .none
        } else if from >= 1, from < versions.current, format == .maplibre, versions.retained.contains(from),
                  versions.deltaAvailable(from: from) {
            self = .deltaIfSmaller(since: from)
        } else {
            self = .full
        }
    }
}
