import Foundation

/// The names a PMTiles archive goes by. A style refers to one as `pmtiles://<http(s) URL>` (the
/// convention of the pmtiles library for MapLibre GL JS); packd stores the TileJSON it derives
/// from the archive under the *key* `pmtiles+https://…` (`pmtiles+http://…`), and its tiles under
/// the template `<key>/{z}/{x}/{y}` — stable names derived from the archive's URL alone.
///
/// Why not `pmtiles://` itself: MapLibre Native hands every `pmtiles://` URL to its PMTiles file
/// source, which reads the archive over the network and never looks in the offline database, so
/// a side-loaded pack could not be found offline. Why not an `http(s)` URL: an online device
/// would ask the server for it, get a 404 and overwrite the stored tile with "no content". A
/// `pmtiles+https` URL is looked up in the offline database like any other, and an online
/// device's request for it fails harmlessly (no HTTP client speaks that scheme).
public enum PMTilesSourceURL {
    /// The style's prefix for an archive (`pmtiles://https://host/file.pmtiles`).
    public static let styleScheme = "pmtiles://"
    /// What goes before the archive's URL in its key.
    public static let keyPrefix = "pmtiles+"

    /// The key of the archive at `url` (an absolute http(s) URL).
    public static func key(forArchive url: String) -> String {
        keyPrefix + url
    }

    /// The archive's URL if `url` is a key (`pmtiles+http(s)://…`), else nil.
    public static func archiveURL(ofKey url: String) -> String? {
        guard url.utf8.count > keyPrefix.utf8.count, url.lowercased().hasPrefix(keyPrefix) else { return nil }
        let archive = String(url.dropFirst(keyPrefix.count))
        return ResourceURL.isHTTP(archive) ? archive : nil
    }

    /// The tile template of the archive whose key is `key`.
    public static func tileTemplate(forKey key: String) -> String {
        key + "/{z}/{x}/{y}"
    }

    /// The key an archive tile template (`<key>/{z}/{x}/{y}`) was derived from, else nil.
    public static func key(ofTemplate template: String) -> String? {
        let suffix = "/{z}/{x}/{y}"
        guard template.hasSuffix(suffix) else { return nil }
        let key = String(template.dropLast(suffix.count))
        return archiveURL(ofKey: key) == nil ? nil : key
    }

    /// Checks an archive URL from a client or a style: absolute http(s) with a host, no user info,
    /// spaces or control characters, and no `{`/`}` (the key becomes part of a tile template).
    static func checkArchive(_ url: String, pointer: String) throws(PlanError) {
        try ResourceURL.checkHTTP(url, pointer: pointer)
        try ResourceURL.checkClientURL(url, pointer: pointer, template: false)
        guard !url.contains("{"), !url.contains("}") else {
            throw PlanError(.unsupportedURL, "an archive URL may not contain { or }", pointer: pointer)
        }
        guard url.utf8.count + keyPrefix.utf8.count + 16 <= ResourceURL.maxLength else {
            throw PlanError(.unsupportedURL, "archive URL longer than \(ResourceURL.maxLength - 32) bytes", pointer: pointer)
        }
    }

    /// The key a style source's `url` names, if it names an archive: `pmtiles://` + an absolute
    /// or style-relative http(s) URL, or a key already (a style packd stored). Nil for other URLs.
    static func key(forSourceURL url: String, styleURL: String, pointer: String) throws(PlanError) -> String? {
        if let archive = archiveURL(ofKey: url) {
            try checkArchive(archive, pointer: pointer)
            return url
        }
        guard url.utf8.count > styleScheme.utf8.count, url.lowercased().hasPrefix(styleScheme) else { return nil }
        let reference = String(url.dropFirst(styleScheme.count))
        let archive = ResourceURL.isHTTP(reference)
            ? reference : try ResourceURL.resolve(reference, against: styleURL, pointer: pointer)
        try checkArchive(archive, pointer: pointer)
        return key(forArchive: archive)
    }

    /// The style as packd stores it: every source `url` naming an archive with `pmtiles://`
    /// replaced by the archive's key, so that the stored style (and a `maplibre` export of it)
    /// leads a MapLibre Native device to the stored TileJSON and tiles with the network off.
    /// Nil when the style names no archive this way (it is then stored as it came). The
    /// rest of the style is kept, re-serialised with sorted keys.
    public static func storedStyle(_ data: Data, url: String) -> Data? {
        guard String(decoding: data, as: UTF8.self).range(of: styleScheme, options: .caseInsensitive) != nil,
              var style = (try? JSONSerialization.jsonObject(with: data)) as? [String: Any],
              var sources = style["sources"] as? [String: Any] else { return nil }
        var changed = false
        for (id, value) in sources {
            guard var source = value as? [String: Any], let reference = source["url"] as? String,
                  reference.lowercased().hasPrefix(styleScheme),
                  let key = try? key(forSourceURL: reference, styleURL: url, pointer: "") else { continue }
            source["url"] = key
            sources[id] = source
            changed = true
        }
        guard changed else { return nil }
        style["sources"] = sources
        return try? JSONSerialization.data(withJSONObject: style, options: [.sortedKeys, .withoutEscapingSlashes])
    }
}
