/// What to answer a `GET`/`HEAD` of a file whose strong entity tag and size are known (an
/// immutable artifact), from the request's `If-None-Match`, `Range` and `If-Range` (RFC 9110
/// §13.2.2's order: `If-None-Match` first; `If-Range` only decides whether `Range` applies).
/// Pure.
public enum ImmutableFileAnswer: Equatable, Sendable {
    /// `304 Not Modified`.
    case notModified
    /// `200` with every byte.
    case whole
    /// `206` with these bytes and `Content-Range: bytes first-last/size`.
    case partial(Range<Int>)
    /// `416` with `Content-Range: bytes */size`.
    case unsatisfiable

    /// `etag` is the quoted strong tag (`"abc"`).
    public static func decide(method: HTTPMethod, headers: HTTPHeaders, etag: String, size: Int) -> ImmutableFileAnswer {
        if let candidates = headers["If-None-Match"], matchesAny(candidates, etag: etag, weak: true) {
            return .notModified
        }
        guard method == .get || method == .head, let header = headers["Range"], let range = ByteRange.parse(header) else {
            return .whole
        }
        if let condition = headers["If-Range"] {
            // A date never matches: these files carry no Last-Modified. A weak tag never matches.
            guard condition.trimmingCharacters(in: " \t") == etag else { return .whole }
        }
        guard let bytes = range.resolve(size: size) else { return .unsatisfiable }
        return .partial(bytes)
    }

    /// Whether an `If-None-Match` list names `etag` (`*` names anything). Weak comparison: a
    /// `W/` prefix is ignored.
    public static func matchesAny(_ list: String, etag: String, weak: Bool) -> Bool {
        for item in list.split(separator: ",") {
            var tag = Substring(item.trimmingCharacters(in: " \t"))
            if tag == "*" { return true }
            if weak, tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
            if tag == etag { return true }
        }
        return false
    }

    /// `Content-Range` for a `206` of `bytes` of `size`.
    public static func contentRange(_ bytes: Range<Int>, size: Int) -> String {
        "bytes \(bytes.lowerBound)-\(bytes.upperBound - 1)/\(size)"
    }

    /// `Content-Range` for a `416`.
    public static func unsatisfiedRange(size: Int) -> String { "bytes */\(size)" }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var view = Substring(self)
        while let first = view.first, set.contains(first) { view = view.dropFirst() }
        while let last = view.last, set.contains(last) { view = view.dropLast() }
        return String(view)
    }
}
