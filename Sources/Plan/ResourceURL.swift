/// Resolution and checking of the URLs found in styles and TileJSON documents.
///
/// Written by hand rather than with Foundation's `URL` because tile templates (`{z}`,
/// `{fontstack}`) are not valid URLs until expanded, and MapLibre keeps them verbatim: the
/// strings we store must be byte-identical to what a phone will request from the offline database.
enum ResourceURL {
    /// The longest URL accepted from a document; real ones are far shorter.
    static let maxLength = 8_192

    /// `reference` resolved against `base` (RFC 3986 §5.2, without dot-segment removal beyond
    /// `./` and `../` at the front of the relative path), then checked to be http(s).
    ///
    /// A document whose own URL is not http(s) — a style MapLibre stored as `mapbox://styles/…`,
    /// `asset://…` or `file://…`, which only an import brings in — is read for its stored rows:
    /// its references are then kept verbatim whatever their scheme, since they are the keys
    /// MapLibre stored them under (fetching one needs an upstream rule mapping the scheme).
    static func resolve(_ reference: String, against base: String, pointer: String) throws(PlanError) -> String {
        guard !reference.isEmpty else {
            throw PlanError(.unsupportedURL, "empty URL", pointer: pointer)
        }
        guard reference.utf8.count <= maxLength else {
            throw PlanError(.unsupportedURL, "URL longer than \(maxLength) bytes", pointer: pointer)
        }
        let storedDocument = !isHTTP(base)
        let resolved: String
        if let scheme = scheme(of: reference) {
            if storedDocument && scheme != "http" && scheme != "https" {
                try checkStoredURL(reference, pointer: pointer)
                return reference
            }
            if scheme == "mapbox" {
                throw PlanError(
                    .unsupportedURL,
                    "mapbox:// URLs need a Mapbox access token and are not supported; use the https URL",
                    pointer: pointer)
            }
            resolved = reference
        } else if reference.hasPrefix("//") {
            resolved = (scheme(of: base) ?? "https") + ":" + reference
        } else if reference.hasPrefix("/") {
            resolved = origin(of: base) + reference
        } else {
            resolved = joinRelative(reference, to: base)
        }
        if storedDocument && !isHTTP(resolved) {
            try checkStoredURL(resolved, pointer: pointer)
            return resolved
        }
        try checkHTTP(resolved, pointer: pointer)
        return resolved
    }

    /// Whether `url` starts with `http:` or `https:` (any case).
    static func isHTTP(_ url: String) -> Bool {
        let scheme = scheme(of: url)
        return scheme == "http" || scheme == "https"
    }

    /// Throws unless `url` can be a stored key as MapLibre writes one: an absolute URL of any
    /// scheme (`mapbox://styles/…`, `asset://…`), bounded, without control characters.
    static func checkStoredURL(_ url: String, pointer: String) throws(PlanError) {
        guard url.utf8.count <= maxLength else {
            throw PlanError(.unsupportedURL, "URL longer than \(maxLength) bytes", pointer: pointer)
        }
        guard scheme(of: url) != nil, !url.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw PlanError(.unsupportedURL, "not an absolute URL: \(url.prefix(200))", pointer: pointer)
        }
    }

    /// Throws unless `url` is an absolute http or https URL with a host.
    static func checkHTTP(_ url: String, pointer: String) throws(PlanError) {
        guard url.utf8.count <= maxLength else {
            throw PlanError(.unsupportedURL, "URL longer than \(maxLength) bytes", pointer: pointer)
        }
        guard let scheme = scheme(of: url), scheme == "http" || scheme == "https" else {
            throw PlanError(.unsupportedURL, "only http and https URLs can be downloaded: \(url)", pointer: pointer)
        }
        // Scalars, not Characters: a combining mark after "//" would merge with the slash.
        let afterScheme = url.unicodeScalars.dropFirst(scheme.unicodeScalars.count + 1)
        guard afterScheme.starts(with: "//".unicodeScalars), let host = afterScheme.dropFirst(2).split(
            separator: "/", maxSplits: 1, omittingEmptySubsequences: false).first, !host.isEmpty,
            host.first != "?", host.first != "#"
        else {
            throw PlanError(.unsupportedURL, "URL has no host: \(url)", pointer: pointer)
        }
    }

    /// Throws when `url` (from an API client) carries user info — credentials belong in the
    /// server's upstream rules, never in stored URLs — a space or control character, or is a URL
    /// libcurl would refuse (`CurlURLCheck`; a `template`'s placeholders filled in).
    static func checkClientURL(_ url: String, pointer: String, template: Bool) throws(PlanError) {
        if url.unicodeScalars.contains(where: { $0.value < 0x21 || $0.value == 0x7F }) {
            throw PlanError(.unsupportedURL, "URL contains a space or a control character", pointer: pointer)
        }
        // Scalars, not Characters: a combining mark after "//" would merge with the slash.
        let afterScheme = url.unicodeScalars.drop { $0 != ":" }.dropFirst(3)
        if afterScheme.prefix(while: { $0 != "/" && $0 != "?" && $0 != "#" }).contains("@") {
            throw PlanError(.unsupportedURL, "URL has user info; credentials belong in the server's upstream rules", pointer: pointer)
        }
        if let refusal = CurlURLCheck.refusal(url, template: template) {
            throw PlanError(.unsupportedURL, refusal, pointer: pointer)
        }
    }

    /// The lowercased scheme, if `url` starts with one (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"`).
    static func scheme(of url: String) -> String? {
        var scheme = ""
        for (index, character) in url.unicodeScalars.enumerated() {
            if character == ":" { return index == 0 ? nil : scheme.lowercased() }
            let isLetter = ("a"..."z").contains(character) || ("A"..."Z").contains(character)
            let isOther = ("0"..."9").contains(character) || character == "+" || character == "-" || character == "."
            guard isLetter || (index > 0 && isOther) else { return nil }
            scheme.unicodeScalars.append(character)
        }
        return nil
    }

    /// `scheme://authority` of an absolute URL (everything before the path).
    private static func origin(of base: String) -> String {
        guard let scheme = scheme(of: base) else { return "" }
        let rest = base.dropFirst(scheme.count + 1)
        guard rest.hasPrefix("//") else { return String(base.prefix(scheme.count + 1)) }
        let authority = rest.dropFirst(2).prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(base.prefix(scheme.count + 3)) + authority
    }

    private static func joinRelative(_ reference: String, to base: String) -> String {
        let origin = origin(of: base)
        var path = String(base.dropFirst(origin.count).prefix { $0 != "?" && $0 != "#" })
        // The base's directory: drop the last segment.
        if let slash = path.lastIndex(of: "/") {
            path = String(path[...slash])
        } else {
            path = "/"
        }
        var relative = Substring(reference)
        while true {
            if relative.hasPrefix("./") {
                relative = relative.dropFirst(2)
            } else if relative.hasPrefix("../") {
                relative = relative.dropFirst(3)
                var directory = path.dropLast()  // drop trailing "/"
                if let slash = directory.lastIndex(of: "/") {
                    directory = directory[...slash]
                    path = String(directory)
                } else {
                    path = "/"
                }
            } else {
                break
            }
        }
        return origin + path + relative
    }
}
