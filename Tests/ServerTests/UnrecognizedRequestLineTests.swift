@testable import Server
import Testing

/// The request line of a method http_parser does not know, read by hand so it can be answered
/// 405 with `Allow` (the sockets side is in RoutingTests).
@Suite struct UnrecognizedRequestLineTests {
    @Test(arguments: [
        ("QUERY /v1/packs HTTP/1.1\r\n", UnrecognizedRequestLine.Outcome.line(.init(method: "QUERY", target: "/v1/packs"))),
        ("QUERY /a?b=1 HTTP/1.0\n", .line(.init(method: "QUERY", target: "/a?b=1"))),
        ("QUERY /v1/pa", .incomplete),
        ("QU\u{1}", .malformed),
        ("QUERY /v1/packs\r\n", .malformed),
        ("QUERY /v1/packs HTTP/1\r\n", .malformed),
        ("QUERY /v1/\u{7F} HTTP/1.1\r\n", .malformed),
        (" /v1/packs HTTP/1.1\r\n", .malformed),
        ("QUERY /" + String(repeating: "a", count: 64), .tooLong),
    ])
    func requestLineOfAnUnknownMethod(text: String, outcome: UnrecognizedRequestLine.Outcome) {
        var line = UnrecognizedRequestLine(prefix: [], limit: 64)
        let result = Array(text.utf8).withUnsafeBytes { line.append($0) }
        #expect(result == outcome)
    }

    @Test func requestLineKeepsThePrefixAndStopsAtItsEnd() {
        var line = UnrecognizedRequestLine(prefix: Array("GET".utf8), limit: 64)
        let first = Array("X /x HT".utf8).withUnsafeBytes { line.append($0) }
        #expect(first == .incomplete)
        let second = Array("TP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n".utf8).withUnsafeBytes { line.append($0) }
        #expect(second == .line(.init(method: "GETX", target: "/x")))
    }
}
