import ArgumentParser
import Foundation
import Packs
import Glibc

/// A blocking HTTP/1.1 client for 127.0.0.1, one connection per request (`Connection: close`):
/// enough to drive packd's API from a benchmark without spawning curl per poll, which would
/// load the machine being measured.
enum LoopbackHTTPClient {
    struct Response {
        let status: Int
        let body: Data

        /// The body as a JSON object.
        func json() throws -> [String: Any] {
            guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
                throw ValidationError("expected a JSON object, got: \(String(decoding: body, as: UTF8.self))")
            }
            return object
        }

        /// The body as a pack (the API's own wire type).
        func pack() throws -> Pack {
            do {
                return try JSONDecoder().decode(Pack.self, from: body)
            } catch {
                throw ValidationError("expected a pack (\(error)), got: \(String(decoding: body.prefix(2000), as: UTF8.self))")
            }
        }
    }

    static func request(port: Int, method: String, path: String, json: Any? = nil) throws -> Response {
        let body = try json.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data()
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if json != nil { head += "Content-Type: application/json\r\n" }
        head += "Content-Length: \(body.count)\r\n\r\n"
        let fd = try connect(port: port)
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Data(head.utf8) + body
        try request.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let result = send(fd, raw.baseAddress! + sent, raw.count - sent, Int32(MSG_NOSIGNAL))
                guard result > 0 else { throw ValidationError("send failed") }
                sent += result
            }
        }
        var received = Data()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(fd, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received.append(contentsOf: buffer[0..<count])
        }
        guard let split = received.range(of: Data("\r\n\r\n".utf8)),
              let statusLine = String(data: received[..<split.lowerBound], encoding: .utf8)?.split(separator: "\r\n").first,
              let status = statusLine.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else {
            throw ValidationError("malformed response from 127.0.0.1:\(port)\(path)")
        }
        let headers = String(decoding: received[..<split.lowerBound], as: UTF8.self).lowercased()
        var payload = Data(received[split.upperBound...])
        if headers.contains("transfer-encoding: chunked") { payload = dechunk(payload) }
        return Response(status: status, body: payload)
    }

    /// A socket connected to 127.0.0.1:`port`; the caller closes it.
    static func connect(port: Int) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ValidationError("socket() failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
        }
        guard connected else {
            close(fd)
            throw ValidationError("cannot connect to 127.0.0.1:\(port)")
        }
        return fd
    }

    private static func dechunk(_ data: Data) -> Data {
        var output = Data()
        var index = data.startIndex
        while let lineEnd = data[index...].range(of: Data("\r\n".utf8)) {
            let sizeText = String(decoding: data[index..<lineEnd.lowerBound], as: UTF8.self)
            guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
            let start = lineEnd.upperBound
            let end = data.index(start, offsetBy: size, limitedBy: data.endIndex) ?? data.endIndex
            output.append(data[start..<end])
            index = min(data.endIndex, end + 2)
        }
        return output
    }
}
