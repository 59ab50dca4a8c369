import CCurl
import Foundation

/// A blocking libcurl client for the `export` and `import` subcommands, which talk to a running
/// packd: one request at a time, bodies streamed from and to files (never held in memory), and
/// failures as a message built from the server's problem+json. The API key goes only into the
/// `Authorization` header; no message ever contains it.
struct ServerClient {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    let server: String
    let apiKey: String?

    /// `--server` checked (http/https, a host) and `--api-key-file` read: the first line,
    /// trimmed, must not be empty.
    init(server: String, apiKeyFile: String?) throws {
        guard let url = URL(string: server), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              url.host != nil, url.user == nil, url.query == nil else {
            throw Failure(description: "--server must be an http(s) URL such as http://127.0.0.1:8080")
        }
        self.server = server.hasSuffix("/") ? String(server.dropLast()) : server
        if let apiKeyFile {
            guard let text = try? String(contentsOfFile: apiKeyFile, encoding: .utf8) else {
                throw Failure(description: "cannot read the API key file \(apiKeyFile)")
            }
            let key = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !key.isEmpty else { throw Failure(description: "the API key file \(apiKeyFile) is empty") }
            apiKey = key
        } else {
            apiKey = nil
        }
    }

    /// GETs `path` into `output` (written to `output.part`, renamed when complete); returns the
    /// bytes written.
    func download(_ path: String, to output: String) throws -> Int64 {
        let partial = output + ".part"
        guard let file = fopen(partial, "wb") else {
            throw Failure(description: "cannot create \(partial): \(String(cString: strerror(errno)))")
        }
        var closed = false
        defer {
            if !closed { fclose(file) }
            unlink(partial)
        }
        let status = try perform(path) { handle in
            packd_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, UnsafeMutableRawPointer(file))
        }
        let flushed = fflush(file) == 0
        fclose(file)
        closed = true
        guard (200..<300).contains(status) else {
            throw Failure(description: Self.problemMessage(status: status, body: (try? Data(contentsOf: URL(fileURLWithPath: partial))) ?? Data()))
        }
        guard flushed, rename(partial, output) == 0 else {
            throw Failure(description: "cannot write \(output): \(String(cString: strerror(errno)))")
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: output)[.size] as? Int64) ?? nil
        return size ?? 0
    }

    /// POSTs the file at `input` as `contentType`; returns the response body (JSON, small).
    func upload(_ path: String, from input: String, contentType: String) throws -> Data {
        guard let file = fopen(input, "rb") else {
            throw Failure(description: "cannot open \(input): \(String(cString: strerror(errno)))")
        }
        defer { fclose(file) }
        var info = stat()
        guard fstat(fileno(file), &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(description: "\(input) is not a regular file")
        }
        let body = ResponseBody()
        let retained = Unmanaged.passRetained(body)
        defer { retained.release() }
        let status = try perform(path, headers: ["Content-Type: \(contentType)"]) { handle in
            packd_easy_setopt_long(handle, CURLOPT_POST, 1)
            // libcurl's default read function freads READDATA: the file is streamed, not loaded.
            packd_easy_setopt_pointer(handle, CURLOPT_READDATA, UnsafeMutableRawPointer(file))
            packd_easy_setopt_off(handle, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(info.st_size))
            packd_easy_setopt_write_callback(handle) { data, size, count, context in
                guard let data, let context else { return 0 }
                let body = Unmanaged<ResponseBody>.fromOpaque(context).takeUnretainedValue()
                let length = size * count
                // A JSON answer; anything much larger is not one.
                guard body.data.count + length <= 64 << 20 else { return 0 }
                body.data.append(UnsafeRawPointer(data).assumingMemoryBound(to: UInt8.self), count: length)
                return length
            }
            packd_easy_setopt_pointer(handle, CURLOPT_WRITEDATA, retained.toOpaque())
        }
        guard (200..<300).contains(status) else {
            throw Failure(description: Self.problemMessage(status: status, body: body.data))
        }
        return body.data
    }

    private final class ResponseBody {
        var data = Data()
    }

    /// Runs one request; returns the HTTP status.
    private func perform(_ path: String, headers: [String] = [], configure: (UnsafeMutableRawPointer) -> Void) throws -> Int {
        guard let handle = curl_easy_init() else { throw Failure(description: "libcurl could not start") }
        defer { curl_easy_cleanup(handle) }
        var list: UnsafeMutablePointer<curl_slist>?
        for header in headers + (apiKey.map { ["Authorization: Bearer \($0)"] } ?? []) {
            list = curl_slist_append(list, header)
        }
        defer { curl_slist_free_all(list) }
        packd_easy_setopt_string(handle, CURLOPT_URL, server + path)
        packd_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, list)
        packd_easy_setopt_long(handle, CURLOPT_NOSIGNAL, 1)
        packd_easy_setopt_long(handle, CURLOPT_CONNECTTIMEOUT, 10)
        // Never follow redirects: the Authorization header must not travel to another host.
        packd_easy_setopt_long(handle, CURLOPT_FOLLOWLOCATION, 0)
        var errorBuffer = [CChar](repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        let code = errorBuffer.withUnsafeMutableBufferPointer { buffer -> CURLcode in
            packd_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, buffer.baseAddress)
            configure(handle)
            return curl_easy_perform(handle)
        }
        guard code == CURLE_OK else {
            let detail = String(decoding: errorBuffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            throw Failure(description: "request to \(server) failed: \(detail.isEmpty ? String(cString: curl_easy_strerror(code)) : detail)")
        }
        var status = 0
        packd_easy_getinfo_long(handle, CURLINFO_RESPONSE_CODE, &status)
        return status
    }

    /// "409 Conflict: detail" plus each field error, from a problem+json body (or the status alone).
    static func problemMessage(status: Int, body: Data) -> String {
        guard let problem = (try? JSONSerialization.jsonObject(with: body.prefix(1 << 20))) as? [String: Any] else {
            return "the server answered \(status)"
        }
        var message = "\(status) \(problem["title"] as? String ?? "error")"
        if let detail = problem["detail"] as? String { message += ": \(detail)" }
        for item in problem["errors"] as? [[String: Any]] ?? [] where item["detail"] as? String != problem["detail"] as? String {
            let location = (item["parameter"] as? String) ?? (item["pointer"] as? String) ?? ""
            message += "\n  \(location.isEmpty ? "" : location + ": ")\(item["detail"] as? String ?? "")"
        }
        return message
    }
}
