import Foundation
import Glibc
import PackdTestSupport
import Testing

/// `packd serve` as a real process downloading from the in-process upstream: the wiring of the
/// scheduler into the API, checked from the outside (POST a pack, poll until complete).
@Suite struct ServeDownloadTests {
    @Test func postedPackCompletesOverHTTPAndShutdownIsClean() throws {
        let upstream = try MapUpstream()
        defer { upstream.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let port = server.port
        let body: [String: Any] = ["name": "e2e", "start": true, "region": PackDownloadTests.region(upstream, maxZoom: 5)]
        let created = try HTTPExchange.send(port: port, method: "POST", path: "/v1/packs",
                                            body: try JSONSerialization.data(withJSONObject: body))
        #expect(created.status == 201 || created.status == 202, "\(String(decoding: created.body, as: UTF8.self))")
        let packID = try #require(try created.json()["id"] as? Int)

        var last: [String: Any] = [:]
        #expect(eventually {
            guard let pack = try? HTTPExchange.send(port: port, method: "GET", path: "/v1/packs/\(packID)").json()
            else { return false }
            last = pack
            return ["complete", "failed"].contains(pack["state"] as? String ?? "")
        })
        #expect(last["state"] as? String == "complete", "\(last)")
        let progress = try #require(last["progress"] as? [String: Any])
        let planned = try PackDownloadTests.planned(upstream, maxZoom: 5).count
        #expect(progress["completed_resources"] as? Int == planned)
        #expect(progress["expected_resources"] as? Int == planned)
        #expect(progress["expected_is_precise"] as? Bool == true)

        #expect(server.stop() == 0)
    }
}

/// One HTTP/1.1 request with `Connection: close` over a fresh socket to 127.0.0.1, read to EOF.
struct HTTPExchange {
    let status: Int
    let body: [UInt8]

    struct Failed: Error {}

    func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else { throw Failed() }
        return object
    }

    /// `headers` are extra `Name: value` lines; `until` ends the read early (an event stream)
    /// once the bytes received so far satisfy it.
    static func send(port: Int, method: String, path: String, body: Data = Data(), headers: [String] = [],
                     until: (([UInt8]) -> Bool)? = nil) throws -> HTTPExchange {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failed() }
        defer { close(fd) }
        var timeout = timeval(tv_sec: 30, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
            }
        }
        guard connected else { throw Failed() }
        var request = Array("""
            \(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r
            \(headers.map { $0 + "\r\n" }.joined())Content-Length: \(body.count)\r\n\r\n
            """.utf8)
        request += body
        guard request.withUnsafeBytes({ Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count
        else { throw Failed() }
        var response: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            response += chunk.prefix(count)
            if let until, until(response) { break }
        }
        guard let end = response.firstRange(of: Array("\r\n\r\n".utf8)) else { throw Failed() }
        let head = String(decoding: response[..<end.lowerBound], as: UTF8.self)
        guard let status = head.split(separator: " ").dropFirst().first.flatMap({ Int($0) }) else { throw Failed() }
        return HTTPExchange(status: status, body: Array(response[end.upperBound...]))
    }
}
