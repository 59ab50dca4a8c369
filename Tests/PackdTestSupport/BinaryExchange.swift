import Foundation
import Glibc

/// One request with a binary body and a binary answer, on its own connection (`Connection:
/// close`), read to the end: exports, imports, tiles and sprites carry bytes the text clients
/// would mangle.
public struct BinaryExchange: Sendable {
    public var status = 0
    public var headers: [(String, String)] = []
    public var body: [UInt8] = []

    public func header(_ name: String) -> String? {
        headers.first { $0.0.lowercased() == name.lowercased() }?.1
    }

    /// The body as a JSON object, empty when it is not one.
    public var json: [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:]
    }

    /// The body as a JSON object; throws when it is not one.
    public func decodedJSON() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw ClientFailure(description: "not a JSON object: \(String(decoding: body.prefix(200), as: UTF8.self))")
        }
        return object
    }

    /// `until` ends the read early (an event stream) once the bytes received so far satisfy it;
    /// `records` sends JSON answers to the openapi check (`ResponseRecorder`).
    public static func send(port: Int, _ method: String, _ target: String, headers: [String: String] = [:],
                            body: [UInt8]? = nil, chunked: Bool = false, records: Bool = true,
                            until: (([UInt8]) -> Bool)? = nil) throws -> BinaryExchange {
        let client = try StreamClient(port: port)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        if let body { head += chunked ? "Transfer-Encoding: chunked\r\n" : "Content-Length: \(body.count)\r\n" }
        var bytes = Array((head + "\r\n").utf8)
        if chunked, let body {
            // 16 KiB chunks: the server learns the size only as the body arrives.
            var offset = 0
            while offset < body.count {
                let end = min(offset + 16 << 10, body.count)
                bytes += Array(String(end - offset, radix: 16).utf8) + [13, 10] + body[offset..<end] + [13, 10]
                offset = end
            }
            bytes += Array("0\r\n\r\n".utf8)
        } else {
            bytes += body ?? []
        }
        try sendAll(client.fd, bytes)
        var raw: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(client.fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                raw += chunk[..<count]
                if let until, until(raw) { break }
                continue
            }
            if count == 0 || errno == ECONNRESET { break }
            throw ClientFailure(description: "recv: \(String(cString: strerror(errno)))")
        }
        guard let end = raw.indices.dropLast(3).first(where: { raw[$0] == 13 && raw[$0 + 1] == 10 && raw[$0 + 2] == 13 && raw[$0 + 3] == 10 })
        else { throw ClientFailure(description: "no response head in \(raw.count) bytes") }
        let lines = String(decoding: raw[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        var exchange = BinaryExchange()
        exchange.status = Int(lines[0].split(separator: " ")[1]) ?? 0
        exchange.headers = lines.dropFirst().compactMap { line in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        exchange.body = Array(raw[(end + 4)...])
        if records, exchange.header("Content-Type")?.contains("json") == true {
            ResponseRecorder.record(method: method, target: target, status: exchange.status, headers: exchange.headers,
                                    body: String(decoding: exchange.body, as: UTF8.self))
        }
        return exchange
    }

    public static func sendAll(_ fd: Int32, _ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            // The server may answer (413) and close before the whole body is sent.
            if sent <= 0 { return }
            offset += sent
        }
    }
}
