import Loop
import Server

/// Test-only routes behind the hidden `--debug-routes` flag: behaviour tests need from a real
/// process (a response that is still streaming when SIGTERM arrives).
struct DebugRoutes {
    let loop: EventLoop

    func register(in router: inout Router) {
        // GET /debug/slow-stream?chunks=N&interval_ms=M: N chunks, one every M milliseconds.
        router.get("/debug/slow-stream") { [loop] request, responder in
            let chunks = request.queryValue("chunks").flatMap(Int.init).map { min(max($0, 1), 1000) } ?? 10
            let interval = request.queryValue("interval_ms").flatMap(UInt64.init).map { min($0, 10_000) } ?? 100
            let stream = responder.stream(headers: ["Content-Type": "text/plain"])
            var sent = 0
            let timer = LoopTimer(loop: loop)
            stream.onClose = { timer.close() }
            timer.start(after: 0, repeat: max(interval, 1)) {
                sent += 1
                stream.write("chunk \(sent)\n")
                if sent >= chunks {
                    timer.close()
                    stream.finish()
                }
            }
        }
    }
}
