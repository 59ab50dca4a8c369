import Glibc
import TimeFormats

/// How a response body is delimited on the wire.
enum BodyFraming {
    case length(Int)
    case chunked
    /// HTTP/1.0 streaming: the body ends when the connection closes.
    case untilClose
}

/// Serialises response heads straight into the connection's output buffer: no intermediate
/// strings, so a small response costs one buffer append and one `uv_write`.
enum ResponseEncoder {
    /// Header fields the server owns; a handler's copies are dropped so framing cannot disagree.
    private static let reserved = ["content-length", "transfer-encoding", "connection", "date", "x-request-id"]

    /// `requestID` (already validated by `RequestIDs`) goes out as `X-Request-Id`; empty: none.
    static func writeHead(
        status: HTTPStatus, headers: HTTPHeaders, framing: BodyFraming, keepAlive: Bool,
        version: HTTPVersion, date: [UInt8], requestID: String = "", into out: inout [UInt8]
    ) {
        out.append(contentsOf: version.minor == 0 ? "HTTP/1.0 ".utf8 : "HTTP/1.1 ".utf8)
        appendDecimal(status.code, to: &out)
        out.append(UInt8(ascii: " "))
        out.append(contentsOf: status.reason.utf8)
        out.append(contentsOf: "\r\nDate: ".utf8)
        out.append(contentsOf: date)
        out.append(contentsOf: "\r\n".utf8)
        if !requestID.isEmpty {
            out.append(contentsOf: "X-Request-Id: ".utf8)
            appendFieldText(requestID, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        for field in headers.fields where !isReserved(field.name) {
            appendFieldText(field.name, to: &out)
            out.append(contentsOf: ": ".utf8)
            appendFieldText(field.value, to: &out)
            out.append(contentsOf: "\r\n".utf8)
        }
        switch framing {
        case .length(let count):
            if status.allowsBody || status.code == 304 {
                out.append(contentsOf: "Content-Length: ".utf8)
                appendDecimal(count, to: &out)
                out.append(contentsOf: "\r\n".utf8)
            }
        case .chunked:
            out.append(contentsOf: "Transfer-Encoding: chunked\r\n".utf8)
        case .untilClose:
            break
        }
        if !keepAlive {
            out.append(contentsOf: "Connection: close\r\n".utf8)
        } else if version.minor == 0 {
            out.append(contentsOf: "Connection: keep-alive\r\n".utf8)
        }
        out.append(contentsOf: "\r\n".utf8)
    }

    /// One chunk of a chunked body: size in hex, CRLF, data, CRLF. Empty data writes nothing
    /// (an empty chunk would end the body).
    static func writeChunk(_ data: UnsafeRawBufferPointer, into out: inout [UInt8]) {
        guard !data.isEmpty else { return }
        appendHex(data.count, to: &out)
        out.append(contentsOf: "\r\n".utf8)
        out.append(contentsOf: data)
        out.append(contentsOf: "\r\n".utf8)
    }

    private static let hex = Array("0123456789abcdef".utf8)
    static let lastChunk = Array("0\r\n\r\n".utf8)
    static let continueLine = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)

    /// Header text with CR, LF and NUL replaced by spaces: a handler that copies request input
    /// into a header (a `Location` with an id) can never split the response.
    private static func appendFieldText(_ text: String, to out: inout [UInt8]) {
        let start = out.count
        out.append(contentsOf: text.utf8)
        for index in start..<out.count where out[index] == 13 || out[index] == 10 || out[index] == 0 {
            out[index] = UInt8(ascii: " ")
        }
    }

    private static func isReserved(_ name: String) -> Bool {
        let count = name.utf8.count
        guard count == 4 || count == 10 || count == 12 || count == 14 || count == 17 else { return false }
        return reserved.contains { name.caseInsensitiveEquals($0) }
    }

    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 10 && value >= 0 {
            out.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var remaining = value.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                buffer[count] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
                count += 1
            } while remaining > 0
            if value < 0 { out.append(UInt8(ascii: "-")) }
            for index in stride(from: count - 1, through: 0, by: -1) { out.append(buffer[index]) }
        }
    }

    static func appendHex(_ value: Int, to out: inout [UInt8]) {
        var shift = (Int.bitWidth - value.leadingZeroBitCount + 3) / 4 * 4
        if shift == 0 { out.append(UInt8(ascii: "0")); return }
        while shift > 0 {
            shift -= 4
            out.append(hex[(value >> shift) & 0xF])
        }
    }
}

/// The `Date` header value (RFC 9110 IMF-fixdate), formatted at most once a second.
struct HTTPDateCache {
    private var second: time_t = -1
    private(set) var bytes: [UInt8] = []

    mutating func current() -> [UInt8] {
        let now = time(nil)
        if now != second {
            second = now
            bytes = HTTPDate.formatBytes(Int64(now))
        }
        return bytes
    }
}
