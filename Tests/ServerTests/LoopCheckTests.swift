import Foundation
import PackdTestSupport
import Server
import Testing

/// What the server owns is loop-bound and checks it in debug builds (see LoopTests'
/// `LoopBoundCheckTests`): a handler that parks its responder and answers it from another thread
/// stops the process at that call — the test doing it fails — instead of racing the connection.
@Suite(.enabled(if: _isDebugAssertConfiguration(), "release builds compile the loop checks out"))
struct LoopCheckTests {
    @Test func aResponderAnsweredOffTheLoopStopsTheProcess() async {
        let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
            let parked = Shared<Responder?>(nil)
            let server = try TestServer { router, _ in
                router.get("/park") { _, responder in parked.update { $0 = responder } }
            }
            let client = try server.client()
            try client.send("GET /park HTTP/1.1\r\n\r\n")
            guard eventually({ parked.current != nil }) else { exit(0) }
            parked.current?.respond(.text("from the wrong thread"))
        }
        if let result {
            #expect(String(decoding: result.standardErrorContent, as: UTF8.self).contains("touched off its loop thread"))
        }
    }

    /// The control: answered from another thread the documented way (`respondFromAnyThread`).
    @Test func aResponderAnsweredThroughTheLoopIsFine() throws {
        let parked = Shared<Responder?>(nil)
        let server = try TestServer { router, _ in
            router.get("/park") { _, responder in parked.update { $0 = responder } }
        }
        defer { server.stop() }
        let client = try server.client()
        try client.send("GET /park HTTP/1.1\r\n\r\n")
        #expect(eventually { parked.current != nil })
        parked.current?.respondFromAnyThread(.text("through the loop"))
        #expect(try client.readResponse().text == "through the loop")
    }
}
