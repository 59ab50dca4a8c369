import Artifacts
import Server

/// The query of `GET /v1/packs/{id}/export` and of `GET /v1/packs/{id}/versions/{v}/export`,
/// validated: a format, for archive formats an optional tile source (a style source name or a
/// tile URL template), on the current-version route whether a pack that is not `complete` may
/// be exported (`partial`), on the versioned route the version a delta starts from (`since`).
/// Refusals name the parameter.
struct ExportRequest: Equatable {
    typealias Format = ArtifactFormat

    /// Which route's parameters are accepted.
    enum Route {
        case current, versioned

        var parameters: [String] {
            switch self {
            case .current: ["format", "source", "partial"]
            case .versioned: ["format", "source", "since"]
            }
        }
    }

    let format: Format
    let source: String?
    let partial: Bool
    let since: Int64?

    static let maximumSourceLength = 256

    init(format: Format = .maplibre, source: String? = nil, partial: Bool = false, since: Int64? = nil) {
        self.format = format
        self.source = source
        self.partial = partial
        self.since = since
    }

    init(_ request: HTTPRequest, route: Route = .current) throws(Problem) {
        var format = Format.maplibre
        var source: String?
        var partial = false
        var since: Int64?
        var seen: Set<String> = []
        for item in request.queryItems {
            guard seen.insert(item.name).inserted else {
                throw Self.invalid(item.name, "query parameter \(item.name) is given more than once")
            }
            guard route.parameters.contains(item.name) else {
                throw Self.invalid(item.name, "unknown query parameter \(item.name); expected " + route.parameters.joined(separator: ", "))
            }
            switch item.name {
            case "format":
                format = try Self.format(item.value)
            case "source":
                source = try Self.source(item.value)
            case "partial":
                guard let value = ["true": true, "false": false][item.value] else {
                    throw Self.invalid("partial", "partial must be true or false")
                }
                partial = value
            default:
                guard let value = Self.version(item.value) else {
                    throw Self.invalid("since", "since must be a pack version: a whole number from 0")
                }
                since = value
            }
        }
        try Self.checkSource(source, format: format)
        if since != nil, format != .maplibre {
            throw Self.invalid("since", "since applies to the maplibre format: deltas are MapLibre offline databases")
        }
        self.init(format: format, source: source, partial: partial, since: since)
    }

    static func format(_ text: String) throws(Problem) -> Format {
        guard let value = Format(rawValue: text) else { throw invalid("format", "format must be one of maplibre, mbtiles, pmtiles") }
        return value
    }

    static func source(_ text: String) throws(Problem) -> String {
        guard (1...maximumSourceLength).contains(text.utf8.count) else {
            throw invalid("source", "source must be 1 to \(maximumSourceLength) bytes")
        }
        return text
    }

    /// A source names one tileset of an archive format; a maplibre export holds them all.
    static func checkSource(_ source: String?, format: Format) throws(Problem) {
        if source != nil, format == .maplibre {
            throw invalid("source", "source applies to the mbtiles and pmtiles formats; a maplibre export holds every source")
        }
    }

    /// A version number in a path or query: digits only, at most 15 of them.
    static func version(_ text: String) -> Int64? {
        guard (1...15).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int64(text)
    }

    static func invalid(_ parameter: String, _ detail: String) -> Problem {
        Problem(.malformedRequest, detail: detail, errors: [Problem.FieldError(parameter: parameter, detail: detail)])
    }
}
