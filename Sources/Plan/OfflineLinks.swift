/// The URLs under which packd serves one pack's resources (openapi.yaml, "Offline resource
/// URLs"): absolute, built from a base such as `http://host:port/v1/packs/7`, each path segment
/// that comes from the style (source ids, sprite ids) percent-encoded, and a query suffix
/// (`?access_token=…` or empty) appended so that MapLibre's own suffixes (`.json`, `@2x.png`,
/// `{z}/{x}/{y}`) land in the path, before the query.
public struct OfflineLinks: Hashable, Sendable {
    /// `scheme://authority/v1/packs/{id}`, no trailing slash.
    public let packBase: String
    /// Empty, or `?name=value` already percent-encoded.
    public let query: String

    public init(packBase: String, query: String = "") {
        self.packBase = packBase
        self.query = query
    }

    public func style() -> String { packBase + "/style.json" + query }
    public func tileJSON(source: String) -> String { packBase + "/sources/" + Self.segment(source) + ".json" + query }
    public func tiles(source: String) -> String { packBase + "/tiles/" + Self.segment(source) + "/{z}/{x}/{y}" + query }
    public func data(source: String) -> String { packBase + "/sources/" + Self.segment(source) + "/data" + query }
    /// The sprite base: MapLibre appends `.json`, `.png`, `@2x.json`, `@2x.png` to its path.
    public func sprite(id: String) -> String { packBase + "/sprites/" + Self.segment(id) + "/sprite" + query }
    public func glyphs() -> String { packBase + "/glyphs/{fontstack}/{range}.pbf" + query }

    /// `text` as one path segment: only RFC 3986 unreserved bytes kept, everything else `%XX`.
    public static func segment(_ text: String) -> String {
        GlyphRanges.percentEncode(text)
    }
}
