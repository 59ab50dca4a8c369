import Foundation

/// The dashboard's files, read once at start into memory: the page (`dashboard/` of the
/// repository: HTML, CSS, JavaScript modules) and, when installed, MapLibre GL JS
/// (`maplibre-gl.js` and `maplibre-gl.css` from the PyPI package `maplibre`, never committed).
///
/// A request can only pick a name out of these tables, so no request path ever reaches the file
/// system: `..`, encoded slashes and symlinks lead nowhere. Only regular files directly in the
/// directory, with a known type and a plain name, are taken; sizes and counts are bounded.
public struct DashboardAssets: Sendable {
    public struct Asset: Sendable {
        public let bytes: [UInt8]
        public let contentType: String
        /// A strong validator of the bytes (FNV-1a 64 and the length): equal files, equal tags.
        public let etag: String
    }

    public struct LoadError: Error, CustomStringConvertible {
        public let description: String
    }

    public static let maximumFiles = 256
    public static let maximumFileBytes = 8 << 20
    public static let maximumTotalBytes = 32 << 20
    /// The two files of MapLibre GL JS the page loads from `vendor/`.
    public static let mapLibraryFiles = ["maplibre-gl.js", "maplibre-gl.css"]

    /// By file name: `index.html`, `app.js`, …
    public let pages: [String: Asset]
    /// `maplibre-gl.js` and `maplibre-gl.css`, or empty: the page then works without maps.
    public let mapLibrary: [String: Asset]
    /// Files left out and why, for the start-up log.
    public let skipped: [String]

    public var hasMapLibrary: Bool { !mapLibrary.isEmpty }

    public init(pages: [String: Asset], mapLibrary: [String: Asset], skipped: [String] = []) {
        self.pages = pages
        self.mapLibrary = mapLibrary
        self.skipped = skipped
    }

    /// Reads `pageDirectory` (must hold `index.html`) and, if given, the map library directory
    /// (must hold both `mapLibraryFiles`, else it is left out and `skipped` says why).
    public static func load(pageDirectory: String, mapLibraryDirectory: String?) throws(LoadError) -> DashboardAssets {
        var skipped: [String] = []
        var total = 0
        let pages = try files(in: pageDirectory, names: nil, total: &total, skipped: &skipped)
        guard pages["index.html"] != nil else {
            throw LoadError(description: "\(pageDirectory) has no index.html")
        }
        var library: [String: Asset] = [:]
        if let mapLibraryDirectory {
            do {
                library = try files(in: mapLibraryDirectory, names: Set(mapLibraryFiles), total: &total, skipped: &skipped)
                if library.count != mapLibraryFiles.count {
                    skipped.append("\(mapLibraryDirectory): needs both \(mapLibraryFiles.joined(separator: " and ")); maps are off")
                    library = [:]
                }
            } catch {
                skipped.append("\(error.description); maps are off")
            }
        }
        return DashboardAssets(pages: pages, mapLibrary: library, skipped: skipped)
    }

    /// The plain names a table may hold: a letter or digit first, then letters, digits, `.`, `_`, `-`.
    static func isPlainName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= 128, isAlphanumeric(first) else { return false }
        return bytes.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-") }
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// `Content-Type` by extension; nil: not served.
    static func contentType(of name: String) -> String? {
        guard let dot = name.lastIndex(of: ".") else { return nil }
        switch name[name.index(after: dot)...].lowercased() {
        case "html": return "text/html; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "json", "map": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "ico": return "image/x-icon"
        case "txt": return "text/plain; charset=utf-8"
        default: return nil
        }
    }

    private static func files(in directory: String, names wanted: Set<String>?, total: inout Int,
                              skipped: inout [String]) throws(LoadError) -> [String: Asset] {
        let manager = FileManager.default
        let names: [String]
        do {
            names = try manager.contentsOfDirectory(atPath: directory).sorted()
        } catch {
            throw LoadError(description: "cannot list \(directory)")
        }
        var assets: [String: Asset] = [:]
        for name in names {
            if let wanted, !wanted.contains(name) { continue }
            let path = directory + "/" + name
            guard isPlainName(name), let type = contentType(of: name) else {
                if !name.hasPrefix(".") { skipped.append("\(path): not a served name or type") }
                continue
            }
            // attributesOfItem does not follow symlinks: only regular files are taken.
            guard let attributes = try? manager.attributesOfItem(atPath: path),
                  attributes[.type] as? FileAttributeType == .typeRegular,
                  let size = (attributes[.size] as? NSNumber)?.intValue else {
                skipped.append("\(path): not a regular file")
                continue
            }
            guard size <= maximumFileBytes, total + size <= maximumTotalBytes, assets.count < maximumFiles else {
                skipped.append("\(path): over the size or count limit")
                continue
            }
            guard let data = manager.contents(atPath: path), data.count <= maximumFileBytes else {
                skipped.append("\(path): unreadable")
                continue
            }
            total += data.count
            let bytes = Array(data)
            assets[name] = Asset(bytes: bytes, contentType: type, etag: etag(bytes))
        }
        return assets
    }

    static func etag(_ bytes: [UInt8]) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return "\"\(String(hash, radix: 16))-\(String(bytes.count, radix: 16))\""
    }
}
