import Fetch
import Foundation

/// The `--upstream-rules-file` document: credentials (headers, query parameters) added to, a
/// different base URL for, and the politeness towards the host of, requests whose canonical URL
/// starts with a prefix.
///
///     {"rules": [{"prefix": "https://api.maptiler.com/", "query": {"key": "…"}},
///                {"prefix": "https://tiles.example/", "headers": {"Authorization": "Bearer …"},
///                 "rewrite_prefix": "http://mirror.internal:8080/"},
///                {"prefix": "https://tile.openstreetmap.org/", "max_transfers": 2, "adaptive": false},
///                {"prefix": "https://cdn.example/", "max_transfers": 512, "requests_per_second": 2000}]}
///
/// The file holds secrets and is untrusted like any input: it is read with a size bound, every
/// field is checked, and an error names the rule index and field but never echoes a value.
enum UpstreamRulesFile {
    static let maximumBytes = 1 << 20
    static let maximumRules = 256
    static let maximumFieldsPerRule = 32
    static let maximumURLBytes = 2048
    static let maximumValueBytes = 8192
    static let transfersRange = 1...10_000
    static let requestsPerSecondRange = 0.001...100_000.0
    /// Headers curl or packd set themselves: a rule overriding them would corrupt the request.
    static let reservedHeaders: Set<String> = ["host", "content-length", "transfer-encoding", "connection",
                                                "te", "upgrade", "if-none-match", "if-modified-since",
                                                "accept-encoding", "range"]

    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func load(path: String) throws(Invalid) -> [UpstreamRule] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw Invalid("cannot open \(path)") }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumBytes + 1) ?? Data()
        } catch {
            throw Invalid("cannot read \(path): \(error.localizedDescription)")
        }
        guard data.count <= maximumBytes else { throw Invalid("\(path) is larger than \(maximumBytes) bytes") }
        return try parse(data)
    }

    static func parse(_ data: Data) throws(Invalid) -> [UpstreamRule] {
        let document: Any
        do {
            document = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw Invalid("not a JSON document")
        }
        guard let object = document as? [String: Any] else { throw Invalid(#"expected an object {"rules": [...]}"#) }
        if let unknown = object.keys.sorted().first(where: { $0 != "rules" }) {
            throw Invalid("unknown field '\(printable(unknown))' (only 'rules')")
        }
        guard let list = object["rules"] as? [Any] else { throw Invalid("rules: expected an array") }
        guard list.count <= maximumRules else { throw Invalid("rules: more than \(maximumRules) rules") }
        var rules: [UpstreamRule] = []
        var prefixes: Set<String> = []
        for (index, item) in list.enumerated() {
            let rule = try parseRule(item, at: "rules[\(index)]")
            guard prefixes.insert(rule.prefix).inserted else {
                throw Invalid("rules[\(index)].prefix: the same prefix as an earlier rule")
            }
            rules.append(rule)
        }
        return rules
    }

    private static func parseRule(_ item: Any, at path: String) throws(Invalid) -> UpstreamRule {
        guard let fields = item as? [String: Any] else { throw Invalid("\(path): expected an object") }
        let known: Set<String> = ["prefix", "headers", "query", "rewrite_prefix", "max_transfers", "requests_per_second",
                                  "adaptive", "http2_prior_knowledge"]
        if let unknown = fields.keys.sorted().first(where: { !known.contains($0) }) {
            throw Invalid("\(path): unknown field '\(printable(unknown))' (prefix, headers, query, rewrite_prefix, "
                          + "max_transfers, requests_per_second, adaptive, http2_prior_knowledge)")
        }
        guard let prefix = fields["prefix"] as? String else { throw Invalid("\(path).prefix: required, a string") }
        // A prefix of another scheme (`mapbox://`, `maptiler://`: the URLs a MapLibre database
        // stores) is mapped to a real server by `rewrite_prefix`, as MapLibre's URL transform does.
        let otherScheme = try checkURLPrefix(prefix, at: "\(path).prefix", anyScheme: true)
        var rewritten: String?
        if let value = fields["rewrite_prefix"] {
            guard let text = value as? String else { throw Invalid("\(path).rewrite_prefix: expected a string") }
            try checkURLPrefix(text, at: "\(path).rewrite_prefix")
            rewritten = text
        }
        let headers = try parseFields(fields["headers"], at: "\(path).headers") { name throws(Invalid) in
            guard FetchRequest.isValidHeaderName(name) else {
                throw Invalid("\(path).headers: '\(printable(name))' is not a header name")
            }
            guard !reservedHeaders.contains(name.lowercased()) else {
                throw Invalid("\(path).headers.\(name): packd sets this header itself")
            }
        }
        let query = try parseFields(fields["query"], at: "\(path).query") { name throws(Invalid) in
            guard name.utf8.count <= 256, !name.isEmpty, !name.utf8.contains(where: { $0 < 0x21 || $0 == 0x7f }) else {
                throw Invalid("\(path).query: '\(printable(name))' is not a query parameter name")
            }
        }
        let policy = try parsePolicy(fields, at: path, wireURL: rewritten ?? prefix)
        guard !headers.isEmpty || !query.isEmpty || rewritten != nil || !policy.isEmpty else {
            throw Invalid("\(path): a rule needs headers, query, rewrite_prefix or a host policy "
                          + "(max_transfers, requests_per_second, adaptive, http2_prior_knowledge)")
        }
        guard !otherScheme || rewritten != nil else {
            throw Invalid("\(path).rewrite_prefix: a prefix that is not http(s) needs a rewrite_prefix to an http(s) URL")
        }
        return UpstreamRule(prefix: prefix, headers: headers, queryItems: query, rewrittenPrefix: rewritten, policy: policy)
    }

    /// `max_transfers` (a whole number), `requests_per_second` (a positive number), `adaptive` and
    /// `http2_prior_knowledge` (booleans; the latter only for a plain http:// upstream).
    private static func parsePolicy(_ fields: [String: Any], at path: String, wireURL: String) throws(Invalid) -> HostPolicy {
        var policy = HostPolicy()
        if let value = fields["max_transfers"] {
            guard let number = jsonNumber(value), number == number.rounded(), transfersRange.contains(Int(exactly: number) ?? 0)
            else {
                throw Invalid("\(path).max_transfers: expected a whole number in \(transfersRange.lowerBound)...\(transfersRange.upperBound)")
            }
            policy.maxTransfers = Int(number)
        }
        if let value = fields["requests_per_second"] {
            guard let number = jsonNumber(value), number.isFinite, requestsPerSecondRange.contains(number) else {
                throw Invalid("\(path).requests_per_second: expected a number in \(requestsPerSecondRange.lowerBound)...\(Int(requestsPerSecondRange.upperBound))")
            }
            policy.requestsPerSecond = number
        }
        if let value = fields["adaptive"] {
            guard let flag = jsonBool(value) else { throw Invalid("\(path).adaptive: expected true or false") }
            policy.adaptive = flag
        }
        if let value = fields["http2_prior_knowledge"] {
            guard let flag = jsonBool(value) else { throw Invalid("\(path).http2_prior_knowledge: expected true or false") }
            guard !flag || wireURL.lowercased().hasPrefix("http://") else {
                throw Invalid("\(path).http2_prior_knowledge: only for an http:// upstream (https negotiates HTTP/2 itself)")
            }
            policy.http2PriorKnowledge = flag
        }
        return policy
    }

    /// JSONSerialization boxes numbers and booleans alike (on Linux a `1` even bridges to `Bool`):
    /// the box's type code tells them apart (`c` is a boolean).
    private static func jsonNumber(_ value: Any) -> Double? {
        guard !(value is String), let number = value as? NSNumber, String(cString: number.objCType) != "c" else { return nil }
        return number.doubleValue
    }

    private static func jsonBool(_ value: Any) -> Bool? {
        guard !(value is String), let number = value as? NSNumber, String(cString: number.objCType) == "c" else { return nil }
        return number.boolValue
    }

    /// `{"name": "value", ...}`, names checked by `checkName`; values are never echoed in errors.
    private static func parseFields(_ value: Any?, at path: String,
                                    checkName: (String) throws(Invalid) -> Void) throws(Invalid) -> [UpstreamRule.Field] {
        guard let value else { return [] }
        guard let object = value as? [String: Any] else { throw Invalid("\(path): expected an object of strings") }
        guard object.count <= maximumFieldsPerRule else { throw Invalid("\(path): more than \(maximumFieldsPerRule) entries") }
        var result: [UpstreamRule.Field] = []
        for name in object.keys.sorted() {
            try checkName(name)
            guard let text = object[name] as? String else { throw Invalid("\(path).\(name): expected a string") }
            guard !text.isEmpty, text.utf8.count <= maximumValueBytes else {
                throw Invalid("\(path).\(name): the value must be 1 to \(maximumValueBytes) bytes")
            }
            guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7f }) else {
                throw Invalid("\(path).\(name): the value contains a control character (a line break?)")
            }
            result.append(UpstreamRule.Field(name, text))
        }
        return result
    }

    /// An absolute http(s) URL prefix with a host, no credentials, no fragment, no control bytes;
    /// with `anyScheme`, also `scheme://…` of another scheme (then true is returned).
    @discardableResult
    private static func checkURLPrefix(_ text: String, at path: String, anyScheme: Bool = false) throws(Invalid) -> Bool {
        guard !text.isEmpty, text.utf8.count <= maximumURLBytes,
              !text.utf8.contains(where: { $0 < 0x21 || $0 == 0x7f }) else {
            throw Invalid("\(path): expected a URL of at most \(maximumURLBytes) bytes with no spaces")
        }
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            let scheme = lower.prefix { $0 != ":" }
            guard anyScheme, lower.dropFirst(scheme.count).hasPrefix("://"), let first = scheme.first, first.isLetter,
                  scheme.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }) else {
                throw Invalid("\(path): expected an http:// or https:// URL" + (anyScheme ? " (or scheme://… with rewrite_prefix)" : ""))
            }
            guard !text.contains("@"), !text.contains("#") else {
                throw Invalid("\(path): credentials or a fragment in the URL")
            }
            return true
        }
        let authority = text.split(separator: "/", maxSplits: 3, omittingEmptySubsequences: false).dropFirst(2).first ?? ""
        guard !authority.isEmpty else { throw Invalid("\(path): the URL has no host") }
        guard !authority.contains("@") else { throw Invalid("\(path): credentials in the URL; use headers or query") }
        guard !text.contains("#") else { throw Invalid("\(path): the URL has a fragment") }
        return false
    }

    /// A name quoted in an error: bounded and without control bytes (names are not secrets).
    private static func printable(_ text: String) -> String {
        String(String(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "?" : Character($0) }).prefix(64))
    }
}
