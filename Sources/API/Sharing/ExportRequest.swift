import Server

/// The query of `GET /v1/packs/{id}/export`, validated: a format, whether a pack that is not
/// `complete` may be exported, and for archive formats an optional tile source (a style source
/// name or a tile URL template). Refusals name the parameter.
struct ExportRequest: Equatable {
    enum Format: String, CaseIterable {
        case maplibre, mbtiles, pmtiles

        var fileExtension: String {
            switch self {
            case .maplibre: "db"
            case .mbtiles: "mbtiles"
            case .pmtiles: "pmtiles"
            }
        }

        var contentType: String {
            switch self {
            case .maplibre, .mbtiles: "application/vnd.sqlite3"
            case .pmtiles: "application/vnd.pmtiles"
            }
        }
    }

    let format: Format
    let source: String?
    let partial: Bool

    static let maximumSourceLength = 256

    init(format: Format = .maplibre, source: String? = nil, partial: Bool = false) {
        self.format = format
        self.source = source
        self.partial = partial
    }

    init(_ request: HTTPRequest) throws(Problem) {
        var format = Format.maplibre
        var source: String?
        var partial = false
        var seen: Set<String> = []
        for item in request.queryItems {
            guard seen.insert(item.name).inserted else {
                throw Self.invalid(item.name, "query parameter \(item.name) is given more than once")
            }
            switch item.name {
            case "format":
                guard let value = Format(rawValue: item.value) else {
                    throw Self.invalid("format", "format must be one of maplibre, mbtiles, pmtiles")
                }
                format = value
            case "source":
                guard (1...Self.maximumSourceLength).contains(item.value.utf8.count) else {
                    throw Self.invalid("source", "source must be 1 to \(Self.maximumSourceLength) bytes")
                }
                source = item.value
            case "partial":
                guard let value = ["true": true, "false": false][item.value] else {
                    throw Self.invalid("partial", "partial must be true or false")
                }
                partial = value
            default:
                throw Self.invalid(item.name, "unknown query parameter \(item.name); expected format, source, partial")
            }
        }
        if source != nil, format == .maplibre {
            throw Self.invalid("source", "source applies to the mbtiles and pmtiles formats; a maplibre export holds every source")
        }
        self.init(format: format, source: source, partial: partial)
    }

    private static func invalid(_ parameter: String, _ detail: String) -> Problem {
        Problem(.malformedRequest, detail: detail, errors: [Problem.FieldError(parameter: parameter, detail: detail)])
    }
}
