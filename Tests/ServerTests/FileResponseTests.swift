import Foundation
import PackdTestSupport
import Server
import Testing

@Suite struct FileResponseTests {
    @Test func fileIsSentWhole_HeadHasItsLength_MissingFileIs404() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-file-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        // Several read blocks and an odd tail; the pattern catches reordered or repeated blocks.
        let size = 1024 * 1024 + 17
        let content = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 12) }
        let file = directory.appendingPathComponent("export.mbtiles")
        try Data(content).write(to: file)
        let outcomes = Shared<[Bool]>([])
        let server = try TestServer { router, _ in
            router.get("/files/{name}") { request, responder in
                let path = directory.appendingPathComponent(request.parameters["name"] ?? "").path
                responder.respondWithFile(path: path, headers: ["Content-Type": "application/vnd.sqlite3"]) { sent in
                    outcomes.update { $0.append(sent) }
                }
            }
        }
        defer { server.stop() }
        let client = try server.client()
        let response = try client.request("GET /files/export.mbtiles HTTP/1.1\r\n\r\n")
        #expect(response.status == 200)
        #expect(response.header("Content-Length") == String(size))
        #expect(response.body == content)
        let head = try client.request("HEAD /files/export.mbtiles HTTP/1.1\r\n\r\n", bodyless: true)
        #expect(head.header("Content-Length") == String(size))
        let missing = try client.request("GET /files/nothing HTTP/1.1\r\n\r\n")
        #expect(missing.status == 404)
        #expect(missing.header("Content-Type") == "application/problem+json")
        #expect(eventually { outcomes.current == [true, true, false] })
    }
}
