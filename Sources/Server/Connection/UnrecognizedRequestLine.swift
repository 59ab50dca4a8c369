/// The request line of a request whose method http_parser does not know.
///
/// http_parser recognises its own list of about thirty methods and stops with
/// `HPE_INVALID_METHOD` at any other — `QUERY`, say. HTTP (and OpenAPI tooling, which sends such
/// methods on purpose) expects `405 Method Not Allowed` with `Allow` for a method the resource does
/// not support, not `400 Malformed request`. So the connection reads the rest of that line here —
/// the method token, the target, the version, bounded like a request head — and answers from the
/// routes; the header fields after it are never read (the answer closes the connection, since
/// without them the body's framing is unknown). Anything that is not a request line stays a 400.
struct UnrecognizedRequestLine {
    struct Line: Equatable {
        let method: String
        let target: String
    }

    enum Outcome: Equatable {
        /// The line has not ended yet.
        case incomplete
        case line(Line)
        /// Not a request line (a method that is not a token, a bad target or version).
        case malformed
        /// No line end within the limit of a request head.
        case tooLong
    }

    private var bytes: [UInt8]
    private let limit: Int

    /// `prefix`: the start of the method that http_parser had already matched before it failed.
    init(prefix: [UInt8], limit: Int) {
        bytes = prefix
        self.limit = limit
    }

    /// Adds bytes that followed; what comes after the line is left unread.
    mutating func append(_ buffer: UnsafeRawBufferPointer) -> Outcome {
        let end = buffer.firstIndex(of: UInt8(ascii: "\n"))
        let take = min(end.map { $0 + 1 } ?? buffer.count, max(0, limit + 1 - bytes.count))
        bytes.append(contentsOf: buffer[..<take])
        if !Self.methodSoFarIsToken(bytes) { return .malformed }
        guard let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) else {
            return bytes.count > limit ? .tooLong : .incomplete
        }
        return Self.parse(bytes[..<newline]).map { .line($0) } ?? .malformed
    }

    /// `method SP target SP HTTP/d.d`, with an optional CR at the end.
    static func parse(_ line: ArraySlice<UInt8>) -> Line? {
        var line = line
        if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
        let parts = line.split(separator: UInt8(ascii: " "), maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenCharacter),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 0x20 && $0 < 0x7F }),
              isVersion(parts[2]) else { return nil }
        return Line(method: String(decoding: parts[0], as: UTF8.self), target: String(decoding: parts[1], as: UTF8.self))
    }

    /// Whether the bytes before the first space (all of them while there is none) can be a method.
    private static func methodSoFarIsToken(_ bytes: [UInt8]) -> Bool {
        for byte in bytes {
            if byte == UInt8(ascii: " ") { return true }
            if !isTokenCharacter(byte) { return false }
        }
        return true
    }

    private static func isVersion(_ bytes: ArraySlice<UInt8>) -> Bool {
        let version = Array(bytes)
        return version.count == 8 && version.starts(with: Array("HTTP/".utf8)) && isDigit(version[5])
            && version[6] == UInt8(ascii: ".") && isDigit(version[7])
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (0x30...0x39).contains(byte) }

    /// RFC 9110 §5.6.2 `tchar`.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}
