import CHTTPParser

/// A request head as http_parser reported it, before routing.
struct RequestHead {
    var method: HTTPMethod
    var target: String
    var headers: HTTPHeaders
    var version: HTTPVersion
    var keepAlive: Bool
    /// The declared `Content-Length`, if there was one.
    var contentLength: UInt64?
    var chunked: Bool
    var expectsContinue: Bool
    /// An `Expect` value other than `100-continue`: the server cannot meet it (RFC 9110 §10.1.1),
    /// so the request is answered 417 instead of being handled as if the header were absent.
    var unsupportedExpectation: String? = nil

    var hasBody: Bool { chunked || (contentLength ?? 0) > 0 }
}

/// Wraps one `http_parser` and turns its callbacks into calls on the connection's `RequestReader`.
///
/// The parser struct and the settings live in allocated memory (http_parser keeps their
/// addresses across `execute` calls); the parser's `data` slot holds this object, unretained: the
/// reader owns both and frees the parser in `deallocate()`.
final class RequestParser {
    private let raw: UnsafeMutablePointer<http_parser>
    unowned(unsafe) var reader: RequestReader?
    private let maxHeaderBytes: Int

    private var url: [UInt8] = []
    private var field: [UInt8] = []
    private var value: [UInt8] = []
    private var fields: [(name: String, value: String)] = []
    private var inValue = false
    private var headerBytes = 0
    /// Whether a request has begun and not yet completed (a partial request is on the wire).
    private(set) var inMessage = false
    /// Set when the head outgrew `maxHeaderBytes`: the error is a 431, not a 400.
    private(set) var headerTooLarge = false

    init(maxHeaderBytes: Int) {
        self.maxHeaderBytes = maxHeaderBytes
        raw = .allocate(capacity: 1)
        http_parser_init(raw, HTTP_REQUEST)
        raw.pointee.data = nil
        url.reserveCapacity(256)
        field.reserveCapacity(64)
        value.reserveCapacity(256)
    }

    func attach() {
        raw.pointee.data = Unmanaged.passUnretained(self).toOpaque()
    }

    func deallocate() {
        raw.deallocate()
    }

    /// Parses `count` bytes; returns how many were consumed (fewer on pause or error).
    func execute(_ data: UnsafePointer<CChar>, _ count: Int) -> Int {
        http_parser_execute(raw, Self.settings, data, count)
    }

    var errno: http_errno { http_errno(rawValue: packd_http_parser_errno(raw)) }
    var isPaused: Bool { errno == HPE_PAUSED }
    var upgraded: Bool { packd_http_parser_upgrade(raw) != 0 }

    func pause() { http_parser_pause(raw, 1) }
    func resume() { http_parser_pause(raw, 0) }

    var errorDescription: String {
        String(cString: http_errno_description(errno))
    }

    /// After `HPE_INVALID_METHOD`, the characters of the method before the one http_parser
    /// refused, which may have come in an earlier read: they are the start of the known method it
    /// was matching (`GETX` fails at `X` with `GET` matched). Empty when it refused the first one.
    var refusedMethodPrefix: [UInt8] {
        guard inMessage, errno == HPE_INVALID_METHOD else { return [] }
        let matching = Self.method(packd_http_parser_method(raw)).rawValue.utf8
        return Array(matching.prefix(Int(packd_http_parser_index(raw))))
    }

    // MARK: callbacks

    /// Counts head bytes against the limit; false once it is exceeded.
    private func withinHeaderLimit(_ count: Int) -> Bool {
        headerBytes += count
        if headerBytes > maxHeaderBytes {
            headerTooLarge = true
            return false
        }
        return true
    }

    private static func append(_ bytes: UnsafePointer<CChar>?, _ count: Int, to buffer: inout [UInt8]) {
        guard let bytes, count > 0 else { return }
        UnsafeRawPointer(bytes).withMemoryRebound(to: UInt8.self, capacity: count) { start in
            buffer.append(contentsOf: UnsafeBufferPointer(start: start, count: count))
        }
    }

    private func urlData(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard withinHeaderLimit(count) else { return 1 }
        Self.append(bytes, count, to: &url)
        return 0
    }

    private func messageBegan() -> Int32 {
        inMessage = true
        headerTooLarge = false
        headerBytes = 0
        url.removeAll(keepingCapacity: true)
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        fields.removeAll(keepingCapacity: true)
        inValue = false
        reader?.parserBeganMessage()
        return 0
    }

    private func headerField(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        if inValue { finishField() }
        guard withinHeaderLimit(count) else { return 1 }
        Self.append(bytes, count, to: &field)
        return 0
    }

    private func headerValue(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        inValue = true
        guard withinHeaderLimit(count) else { return 1 }
        Self.append(bytes, count, to: &value)
        return 0
    }

    private func finishField() {
        fields.append((name: String(decoding: field, as: UTF8.self), value: String(decoding: value, as: UTF8.self)))
        field.removeAll(keepingCapacity: true)
        value.removeAll(keepingCapacity: true)
        inValue = false
    }

    private func headersComplete() -> Int32 {
        if inValue { finishField() }
        let flags = packd_http_parser_flags(raw)
        var headers = HTTPHeaders()
        var expectsContinue = false
        var unsupportedExpectation: String?
        for field in fields {
            headers.add(field.name, field.value)
            if field.name.caseInsensitiveEquals("expect") {
                if field.value.caseInsensitiveEquals("100-continue") {
                    expectsContinue = true
                } else {
                    unsupportedExpectation = field.value
                }
            }
        }
        let head = RequestHead(
            method: Self.method(packd_http_parser_method(raw)),
            target: String(decoding: url, as: UTF8.self),
            headers: headers,
            version: HTTPVersion(major: Int(raw.pointee.http_major), minor: Int(raw.pointee.http_minor)),
            keepAlive: http_should_keep_alive(raw) != 0,
            contentLength: flags & UInt32(F_CONTENTLENGTH.rawValue) != 0 ? raw.pointee.content_length : nil,
            chunked: flags & UInt32(F_CHUNKED.rawValue) != 0,
            expectsContinue: expectsContinue,
            unsupportedExpectation: unsupportedExpectation
        )
        // Any value other than 0, 1 or 2 makes http_parser stop with HPE_CB_headers_complete.
        return reader?.parserCompletedHead(head) ?? false ? 0 : 3
    }

    private func body(_ bytes: UnsafePointer<CChar>?, _ count: Int) -> Int32 {
        guard let bytes, count > 0 else { return 0 }
        let buffer = UnsafeRawBufferPointer(start: bytes, count: count)
        return reader?.parserReceivedBody(buffer) ?? false ? 0 : 1
    }

    private func messageComplete() -> Int32 {
        inMessage = false
        reader?.parserCompletedMessage()
        return 0
    }

    // MARK: C glue

    private static let methods: [HTTPMethod] = (0..<64).map { index in
        HTTPMethod(rawValue: String(cString: http_method_str(http_method(rawValue: UInt32(index)))))
    }

    private static func method(_ code: UInt32) -> HTTPMethod {
        code < methods.count ? methods[Int(code)] : HTTPMethod(rawValue: "UNKNOWN")
    }

    private static func parser(_ raw: UnsafeMutablePointer<http_parser>?) -> RequestParser? {
        guard let data = raw?.pointee.data else { return nil }
        return Unmanaged<RequestParser>.fromOpaque(data).takeUnretainedValue()
    }

    nonisolated(unsafe) private static let settings: UnsafeMutablePointer<http_parser_settings> = {
        let settings = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
        settings.initialize(to: http_parser_settings())
        http_parser_settings_init(settings)
        settings.pointee.on_message_begin = { parser($0)?.messageBegan() ?? 1 }
        settings.pointee.on_url = { parser($0)?.urlData($1, $2) ?? 1 }
        settings.pointee.on_header_field = { parser($0)?.headerField($1, $2) ?? 1 }
        settings.pointee.on_header_value = { parser($0)?.headerValue($1, $2) ?? 1 }
        settings.pointee.on_headers_complete = { parser($0)?.headersComplete() ?? 3 }
        settings.pointee.on_body = { parser($0)?.body($1, $2) ?? 1 }
        settings.pointee.on_message_complete = { parser($0)?.messageComplete() ?? 1 }
        return settings
    }()
}
