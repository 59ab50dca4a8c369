import CCurl
import Foundation
import Packs

/// The one HTTP client of the subcommands that talk to a running packd (`create`, `list`, `wait`,
/// `export`, …): blocking libcurl, one request at a time, JSON bodies encoded and decoded with
/// Packs' wire types, files streamed from and to disk (never held in memory), event streams
/// handed over as they arrive, and failures as a `ClientFailure` built from the server's
/// problem+json. The API key goes only into the `Authorization` header; no message contains it.
struct ServerClient {
    /// JSON answers larger than this are not what packd sends (a page of 500 packs with large
    /// geometries stays far below it).
    static let maximumJSONBytes = 256 << 20

    let server: String
    private let apiKey: String?

    /// `server` checked: http(s), a host, no user or query.
    init(server: String, apiKey: String?) throws(ClientFailure) {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host != nil, url.user == nil, url.query == nil else {
            throw .invalidInput("--server (or PACKD_SERVER) must be an http(s) URL such as http://127.0.0.1:8080")
        }
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        self.apiKey = apiKey
    }

    /// One answer: the status, the header fields (names lower-cased) and the body.
    struct Response {
        var status: Int
        var headers: [String: String]
        var body: Data

        var isSuccess: Bool { (200..<300).contains(status) }
    }

    // MARK: JSON

    /// GET `path`, a 2xx body decoded as `T`.
    func get<T: Decodable>(_ type: T.Type, _ path: String) throws(ClientFailure) -> T {
        try send(type, "GET", path)
    }

    /// `method` `path` without a body (`POST …/suspend`), a 2xx body decoded as `T`.
    func send<T: Decodable>(_ type: T.Type, _ method: String, _ path: String) throws(ClientFailure) -> T {
        try decode(type, send(method, path), path: path)
    }

    /// `method` `path` with `body` as JSON, a 2xx body decoded as `T`.
    func send<T: Decodable>(_ type: T.Type, _ method: String, _ path: String, json body: some Encodable) throws(ClientFailure) -> T {
        let bytes: [UInt8]
        do {
            bytes = try SortedJSONEncoder.encode(body)
        } catch {
            throw .invalidInput("cannot encode the request: \(error)")
        }
        return try decode(type, send(method, path, body: bytes, headers: ["Content-Type: application/json"]), path: path)
    }

    /// One request with an optional JSON body; any status is returned (see `Response.isSuccess`).
    func send(_ method: String, _ path: String, body: [UInt8]? = nil, headers: [String] = []) throws(ClientFailure) -> Response {
        let sink = BufferedSink(limit: Self.maximumJSONBytes)
        // POST, PUT and PATCH always send a body (an empty one with `Content-Length: 0`).
        let fields = body ?? (["POST", "PUT", "PATCH"].contains(method) ? [] : nil)
        try perform(path, headers: headers, sink: sink, timeout: 300) { handle in
            packd_easy_setopt_string(handle, CURLOPT_CUSTOMREQUEST, method)
            if method == "HEAD" { packd_easy_setopt_long(handle, CURLOPT_NOBODY, 1) }
            if let fields {
                // COPYPOSTFIELDS: libcurl keeps its own copy, so no pointer outlives this closure.
                packd_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(fields.count))
                if fields.isEmpty {
                    packd_easy_setopt_string(handle, CURLOPT_COPYPOSTFIELDS, "")
                } else {
                    _ = fields.withUnsafeBytes { buffer in
                        packd_easy_setopt_pointer(handle, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: buffer.baseAddress))
                    }
                }
            }
        }
        guard !sink.overflowed else {
            throw .unexpected("the answer to \(method) \(path) is larger than \(Self.maximumJSONBytes >> 20) MiB")
        }
        return Response(status: sink.status, headers: sink.headers, body: sink.data)
    }

    private func decode<T: Decodable>(_ type: T.Type, _ response: Response, path: String) throws(ClientFailure) -> T {
        guard response.isSuccess else { throw ClientFailure.refusal(status: response.status, body: response.body) }
        do {
            return try JSONDecoder().decode(type, from: response.body)
        } catch {
            throw .unexpected("the answer to \(path) is not the documented JSON: \(error)")
        }
    }

    // MARK: Files

    /// POSTs the file at `input` as `contentType`; returns the response body (JSON, small).
    func upload(_ path: String, from input: String, contentType: String) throws(ClientFailure) -> Data {
        guard let file = fopen(input, "rb") else {
            throw .invalidInput("cannot open \(input): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var info = stat()
        guard fstat(fileno(file), &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw .invalidInput("\(input) is not a regular file")
        }
        let sink = BufferedSink(limit: 64 << 20)
        try perform(path, headers: ["Content-Type: \(contentType)"], sink: sink, timeout: nil) { handle in
            packd_easy_setopt_long(handle, CURLOPT_POST, 1)
            // libcurl's default read function freads READDATA: the file is streamed, not loaded.
            packd_easy_setopt_pointer(handle, CURLOPT_READDATA, UnsafeMutableRawPointer(file))
            packd_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(info.st_size))
        }
        guard sink.isSuccess else { throw ClientFailure.refusal(status: sink.status, body: sink.data) }
        return sink.data
    }

    // MARK: Streams

    /// GETs `path` and hands each chunk of a 2xx body to `receive` as it arrives, until the
    /// server ends the response, the connection fails, or `receive` returns false. A response
    /// that is not 2xx, or whose `Content-Type` does not start with `contentType`, is returned
    /// as it is (`opened` false) without calling `receive`. `idleTimeout`: seconds without a byte
    /// after which the connection counts as failed.
    func stream(_ path: String, headers: [String], contentType: String, idleTimeout: Int,
                receive: @escaping ([UInt8]) -> Bool) throws(ClientFailure) -> (opened: Bool, response: Response) {
        let sink = StreamSink(contentType: contentType, receive: receive)
        do {
            try perform(path, headers: headers, sink: sink, timeout: nil, idleTimeout: idleTimeout) { _ in }
        } catch {
            // A stream that was open and then broke is an end like any other; the caller reconnects.
            guard sink.opened else { throw error }
        }
        return (sink.opened, Response(status: sink.status, headers: sink.headers, body: sink.refusal.data))
    }

    // MARK: libcurl

    /// Runs one request into `sink`. `timeout`: seconds for the whole request (nil: none);
    /// `idleTimeout`: seconds without a byte before it fails. A transfer the sink stopped is not
    /// a failure.
    func perform(_ path: String, headers: [String] = [], sink: ResponseSink, timeout: Int?, idleTimeout: Int = 120,
                         configure: (UnsafeMutableRawPointer) -> Void) throws(ClientFailure) {
        guard let handle = curl_easy_init() else { throw .unexpected("libcurl could not start") }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers + (apiKey.map { ["Authorization: Bearer \($0)"] } ?? []) {
            list = curl_slist_append(list, header)
        }
        defer { curl_slist_free_all(list) }
        let capture = ResponseCapture(handle: handle, sink: sink)
        let retained = Unmanaged.passRetained(capture)
        defer { retained.release() }
        packd_easy_setopt_string(handle, CURLOPT_URL, server + path)
        packd_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        packd_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        packd_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, 10)
        packd_easy_setopt_long(handle, CURLOPT_LOW_SPEED_LIMIT, 1)
        packd_easy_setopt_long(handle, CURLOPT_LOW_SPEED_TIME, idleTimeout)
        if let timeout { packd_easy_setopt_long(handle, CURLOPT_TIMEOUT, timeout) }
        // Never follow redirects: the Authorization header must not travel to another host.
        packd_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        packd_easy_setopt_header_callback(handle) { data, size, count, context in
            guard let data, let context else { return 0 }
            let capture = Unmanaged<ResponseCapture>.fromOpaque(context).takeUnretainedValue()
            capture.header(UnsafeRawBufferPointer(start: data, count: size * count))
            return size * count
        }
        packd_easy_setopt_pointer(handle, CURLOPT_HEADERDATA, retained.toOpaque())
        packd_easy_setopt_write_callback(handle) { data, size, count, context in
            guard let data, let context else { return 0 }
            let capture = Unmanaged<ResponseCapture>.fromOpaque(context).takeUnretainedValue()
            return capture.body(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
        }
        packd_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, retained.toOpaque())
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = errorBuffer.withUnsafeMutableBufferPointer { buffer -> CURLcode in
            packd_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress)
            configure(handle)
            return curl_easy_perform(handle)
        }
        if code == CURLE_WRITE_ERROR, capture.stopped { return }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw .unreachable("request to \(server) failed: \(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)")
        }
        capture.finish()
    }
}

/// The head of a response as libcurl reports it, handed to the sink before the first body byte
/// (or at the end, for a response without a body).
private final class ResponseCapture {
    let handle: UnsafeMutableRawPointer
    let sink: ResponseSink
    private var headers: [String: String] = [:]
    private var begun = false
    /// The sink declined more of the body (not a transport failure).
    private(set) var stopped = false

    init(handle: UnsafeMutableRawPointer, sink: ResponseSink) {
        self.handle = handle
        self.sink = sink
    }

    /// One header line; a status line starts a new head (after a `100 Continue`).
    func header(_ line: UnsafeRawBufferPointer) {
        guard line.count <= 16 << 10 else { return }
        let text = String(decoding: line, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if text.hasPrefix("HTTP/") {
            headers = [:]
            return
        }
        guard let colon = text.firstIndex(of: ":"), headers.count < 200 else { return }
        headers[text[..<colon].lowercased()] = text[text.index(after: colon)...].trimmingCharacters(in: .whitespaces)
    }

    func body(_ bytes: UnsafeRawBufferPointer) -> Bool {
        begin()
        guard sink.receive(bytes) else {
            stopped = true
            return false
        }
        return true
    }

    func finish() { begin() }

    private func begin() {
        guard !begun else { return }
        begun = true
        var status = 0
        packd_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        sink.begin(status: status, headers: headers)
    }
}

/// Where a response goes.
protocol ResponseSink: AnyObject {
    func begin(status: Int, headers: [String: String])
    /// False stops the transfer.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool
}

/// The whole body in memory, up to `limit` bytes.
final class BufferedSink: ResponseSink {
    let limit: Int
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private(set) var data = Data()
    private(set) var overflowed = false
    var isSuccess: Bool { (200..<300).contains(status) }

    init(limit: Int) { self.limit = limit }

    func begin(status: Int, headers: [String: String]) {
        self.status = status
        self.headers = headers
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard data.count + bytes.count <= limit else {
            overflowed = true
            return false
        }
        data.append(contentsOf: bytes)
        return true
    }
}

/// A 2xx body of the expected type handed on chunk by chunk; anything else kept for the caller.
private final class StreamSink: ResponseSink {
    let contentType: String
    let receiveChunk: ([UInt8]) -> Bool
    private(set) var status = 0
    private(set) var headers: [String: String] = [:]
    private(set) var opened = false
    let refusal = BufferedSink(limit: 1 << 20)

    init(contentType: String, receive: @escaping ([UInt8]) -> Bool) {
        self.contentType = contentType
        receiveChunk = receive
    }

    func begin(status: Int, headers: [String: String]) {
        self.status = status
        self.headers = headers
        opened = (200..<300).contains(status) && (headers["content-type"]?.lowercased().hasPrefix(contentType) ?? false)
        refusal.begin(status: status, headers: headers)
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard opened else { return refusal.receive(bytes) }
        return receiveChunk(Array(bytes))
    }
}
