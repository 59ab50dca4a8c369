/// A completed HTTP exchange (any status: 404 and 500 are responses, not errors — the caller's
/// retry policy decides what they mean).
public struct FetchResponse: Sendable {
    public var status: Int
    public var headers: ResponseHeaders
    /// The body exactly as received: still gzip-encoded when `headers.contentEncoding` says so,
    /// because the store keeps compressed bodies and would only re-compress a decoded one.
    public var body: [UInt8]
    /// Canonical URL of the last redirect hop (credentials stripped).
    public var effectiveURL: String
    public var redirects: Int
}

/// The response headers packd acts on. Only these are kept, so nothing else an upstream sends
/// (cookies, echoed tokens) can travel further into the system.
public struct ResponseHeaders: Sendable, Equatable {
    public static let kept: Set<String> = [
        "content-type", "content-encoding", "etag", "last-modified", "expires", "cache-control", "retry-after",
        "age", "date", "content-range",
    ]
    static let maxValueBytes = 4096

    /// The kept headers by lower-case name.
    public private(set) var fields: [String: String] = [:]

    public init(_ fields: [String: String] = [:]) {
        for (name, value) in fields { set(name, value) }
    }

    public subscript(name: String) -> String? { fields[name.lowercased()] }

    public var contentType: String? { fields["content-type"] }
    public var contentEncoding: String? { fields["content-encoding"] }
    public var etag: String? { fields["etag"] }
    public var lastModified: String? { fields["last-modified"] }
    public var expires: String? { fields["expires"] }
    public var cacheControl: String? { fields["cache-control"] }
    public var retryAfter: String? { fields["retry-after"] }

    mutating func set(_ name: String, _ value: String) {
        let name = name.lowercased()
        guard Self.kept.contains(name) else { return }
        keep(name, value)
    }

    /// `name` is one of `kept`, lowercase.
    private mutating func keep(_ name: String, _ value: String) {
        guard value.utf8.count <= Self.maxValueBytes else { return }
        fields[name] = value
    }

    mutating func removeAll() { fields.removeAll() }

    /// Parses one raw header line from curl (`Name: value\r\n`); status lines, blanks and names
    /// not kept are ignored without building a string (this runs for every header of every tile).
    mutating func parse(line: UnsafeRawBufferPointer) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > 0,
              let name = Self.keptNames.first(where: { line[..<colon].equalsIgnoringASCIICase($0.bytes) })?.name
        else { return }
        keep(name, String(decoding: Self.trimmed(line[(colon + 1)...]), as: UTF8.self))
    }

    private static let keptNames: [(name: String, bytes: [UInt8])] = kept.sorted().map { ($0, Array($0.utf8)) }

    /// The value without surrounding blanks and the line's CRLF.
    static func trimmed(_ value: Slice<UnsafeRawBufferPointer>) -> Slice<UnsafeRawBufferPointer> {
        var value = value
        while let first = value.first, first == 0x20 || first == 0x09 { value = value.dropFirst() }
        while let last = value.last, last == 0x0d || last == 0x0a || last == 0x20 || last == 0x09 { value = value.dropLast() }
        return value
    }
}
