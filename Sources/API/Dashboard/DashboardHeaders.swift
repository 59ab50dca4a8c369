import Server

/// The header fields of every dashboard answer. The Content-Security-Policy allows only what
/// the page and MapLibre GL JS need, all from packd itself:
/// - scripts and styles from `'self'` only: no inline script or style element, no `eval`;
///   element styles set from script (MapLibre's canvas sizing) are not governed by it;
/// - `worker-src blob:`: MapLibre GL JS starts its workers from a blob URL of its own bundle;
/// - `img-src data: blob:`: MapLibre's control icons are data URLs, decoded sprites and raster
///   tiles blob URLs;
/// - `connect-src 'self'` (plus `--public-url`'s origin, where the offline style points): the
///   API, the event stream, and the offline style, tiles, sprites and glyphs of a preview;
/// - no framing (`frame-ancestors 'none'`), no `<base>`, no form posts elsewhere.
enum DashboardHeaders {
    static func fields(publicOrigin: String?) -> HTTPHeaders {
        var connect = "'self'"
        if let publicOrigin { connect += " " + publicOrigin }
        let policy = [
            "default-src 'none'", "script-src 'self'", "style-src 'self'", "img-src 'self' data: blob:",
            "font-src 'self'", "connect-src \(connect)", "worker-src blob:", "child-src blob:",
            "frame-ancestors 'none'", "base-uri 'none'", "form-action 'self'",
        ].joined(separator: "; ")
        return [
            "Content-Security-Policy": policy,
            "X-Content-Type-Options": "nosniff",
            // The page's URLs carry nothing secret, but nothing about them needs to leave either.
            "Referrer-Policy": "no-referrer",
            "X-Frame-Options": "DENY",
            "Cross-Origin-Opener-Policy": "same-origin",
        ]
    }

    /// `scheme://host[:port]` of an http(s) URL (already validated by `--public-url` parsing), as
    /// a browser serialises an origin: lowercase, without the scheme's default port.
    static func origin(of url: String) -> String? {
        guard let schemeEnd = url.range(of: "://") else { return nil }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        var host = url[schemeEnd.upperBound...].prefix { $0 != "/" }.lowercased()
        guard !host.isEmpty else { return nil }
        let defaultPort = scheme == "https" ? ":443" : ":80"
        if host.hasSuffix(defaultPort) { host.removeLast(defaultPort.count) }
        return scheme + "://" + host
    }
}
