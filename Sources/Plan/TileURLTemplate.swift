import Geo

/// A tile URL template parsed once, expanded per tile without re-scanning the string.
///
/// Placeholders: `{z} {x} {y}`, `{-y}` (the TMS row whatever the scheme), `{s}` (a subdomain,
/// chosen as `(x + y) % count` so the same tile always goes to the same host and neighbouring
/// tiles spread over all of them), `{quadkey}`, `{bbox-epsg-3857}`, `{prefix}` (MapLibre:
/// hex digits of `x % 16` and `y % 16`), `{ratio}` (`@2x` when the pixel ratio is above 1).
/// Unknown placeholders such as `{key}` stay verbatim, as in MapLibre's `replaceTokens`.
///
/// With `scheme: tms`, only `{y}` changes: `{quadkey}`, `{bbox-epsg-3857}` and `{prefix}` describe
/// the tile's real position (MapLibre feeds them the flipped row, which names a different place).
public struct TileURLTemplate: Hashable, Sendable {
    public enum Scheme: String, Hashable, Sendable {
        case xyz, tms
    }

    enum Segment: Hashable, Sendable {
        case literal(String)
        case z, x, y, flippedY, subdomain, quadkey, bbox, prefix, ratio
    }

    /// The template as written; MapLibre's `tiles.url_template` column stores this string.
    public let template: String
    public let scheme: Scheme
    public let subdomains: [String]
    let segments: [Segment]

    /// Parses `template`. Throws when it cannot address a tile (no `{z}`+`{x}`+`{y}`/`{-y}`,
    /// `{quadkey}` or `{bbox-epsg-3857}`), or uses `{s}` without subdomains.
    public init(_ template: String, scheme: Scheme = .xyz, subdomains: [String] = []) throws(PlanError) {
        self.template = template
        self.scheme = scheme
        self.subdomains = subdomains
        segments = Self.parse(template)
        let tokens = Set(segments)
        let addressesTile = tokens.isSuperset(of: [.z, .x]) && !tokens.isDisjoint(with: [.y, .flippedY])
            || tokens.contains(.quadkey) || tokens.contains(.bbox)
        guard addressesTile else {
            throw PlanError(
                .templateWithoutCoordinates,
                "tile URL template needs {z}, {x} and {y} (or {quadkey} or {bbox-epsg-3857}): \(template)")
        }
        if tokens.contains(.subdomain) && subdomains.isEmpty {
            throw PlanError(.templateWithoutCoordinates, "tile URL template uses {s} but no subdomains are given")
        }
    }

    /// Whether `{ratio}` occurs: MapLibre then stores the tile with pixel ratio 2 on high-density
    /// screens, otherwise always 1.
    public var supportsRatio: Bool { segments.contains(.ratio) }

    /// The `pixel_ratio` MapLibre stores in the `tiles` table for this template.
    public func storedPixelRatio(for pixelRatio: Double) -> Int {
        supportsRatio && pixelRatio > 1 ? 2 : 1
    }

    /// The URL of `tile` (given in XYZ numbering).
    public func url(for tile: TileID, pixelRatio: Double) -> String {
        var url = ""
        url.reserveCapacity(template.utf8.count + 16)
        for segment in segments {
            switch segment {
            case .literal(let text): url += text
            case .z: url += String(tile.z)
            case .x: url += String(tile.x)
            case .y: url += String(scheme == .tms ? tile.flippedY().y : tile.y)
            case .flippedY: url += String(tile.flippedY().y)
            case .subdomain: url += subdomains[(tile.x + tile.y) % subdomains.count]
            case .quadkey: url += tile.quadkey
            case .bbox:
                let bounds = tile.epsg3857Bounds
                url += [bounds.minX, bounds.minY, bounds.maxX, bounds.maxY].map(Self.format).joined(separator: ",")
            case .prefix:
                let digits = Array("0123456789abcdef")
                url.append(digits[tile.x % 16])
                url.append(digits[tile.y % 16])
            case .ratio: url += pixelRatio > 1 ? "@2x" : ""
            }
        }
        return url
    }

    /// Shortest round-trip decimal, without Swift's trailing `.0` on whole numbers (`0`, not `0.0`),
    /// matching how map servers print bbox values.
    static func format(_ value: Double) -> String {
        if value == value.rounded(), abs(value) < 1e15 {
            return String(Int(value))
        }
        return String(value)
    }

    private static func parse(_ template: String) -> [Segment] {
        var segments: [Segment] = []
        var literal = ""
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{") {
            literal += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                literal += rest[open...]
                rest = ""
                break
            }
            let name = rest[rest.index(after: open)..<close]
            if let token = token(named: name) {
                if !literal.isEmpty { segments.append(.literal(literal)) }
                literal = ""
                segments.append(token)
            } else {
                literal += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        literal += rest
        if !literal.isEmpty { segments.append(.literal(literal)) }
        return segments
    }

    private static func token(named name: Substring) -> Segment? {
        switch name {
        case "z": .z
        case "x": .x
        case "y": .y
        case "-y": .flippedY
        case "s": .subdomain
        case "quadkey": .quadkey
        case "bbox-epsg-3857": .bbox
        case "prefix": .prefix
        case "ratio": .ratio
        default: nil
        }
    }
}
