/// A problem with a style or TileJSON document that the user can act on.
///
/// Documents arrive from upstream servers the user chose, so every error names the document
/// (`url`) and, where it helps, the place inside it (`pointer`, an RFC 6901 JSON pointer), so the
/// pack's `error` can say exactly what to fix upstream.
public struct PlanError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Stable machine-readable reasons; the API reports them as `error.code`.
    public enum Code: String, Hashable, Sendable {
        case styleNotJSON = "style_not_json"
        case styleVersion = "style_version"
        case styleInvalid = "style_invalid"
        case sourceWithoutTiles = "source_without_tiles"
        case tileJSONInvalid = "tilejson_invalid"
        case templateWithoutCoordinates = "template_without_coordinates"
        case unsupportedURL = "unsupported_url"
        case documentTooLarge = "document_too_large"
        case unknownTileJSON = "unknown_tilejson"
    }

    public let code: Code
    public let detail: String
    /// JSON pointer inside the document, e.g. `/sources/osm/tiles/0`.
    public let pointer: String?
    /// The document (or resource URL) the problem is about.
    public let url: String?

    public init(_ code: Code, _ detail: String, pointer: String? = nil, url: String? = nil) {
        self.code = code
        self.detail = detail
        self.pointer = pointer
        self.url = url
    }

    public var description: String {
        var text = "\(code.rawValue): \(detail)"
        if let pointer { text += " at \(pointer)" }
        if let url { text += " in \(url)" }
        return text
    }

    /// The same problem, attributed to the document it was found in.
    func located(in url: String) -> PlanError {
        PlanError(code, detail, pointer: pointer, url: self.url ?? url)
    }
}

/// The problems found in a region definition: all of them, not just the first, so a client
/// can fix a request in one round trip (the API turns them into 422 `errors[]`).
public struct RegionError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Problem: Hashable, Sendable {
        /// JSON pointer relative to the region object, e.g. `/max_zoom` or `/geometry/coordinates/0`.
        public let pointer: String
        public let detail: String

        public init(pointer: String, detail: String) {
            self.pointer = pointer
            self.detail = detail
        }
    }

    public let problems: [Problem]

    public init(_ problems: [Problem]) {
        self.problems = problems
    }

    public var description: String {
        problems.map { "\($0.pointer): \($0.detail)" }.joined(separator: "; ")
    }
}

/// JSON pointer escaping (RFC 6901) for keys taken from documents.
enum JSONPointer {
    static func appending(_ base: String, _ key: String) -> String {
        base + "/" + key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    static func appending(_ base: String, _ index: Int) -> String {
        base + "/" + String(index)
    }
}
