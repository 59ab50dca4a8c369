import Foundation
import PackdTestSupport

/// What the JobsTests ask of a running `packd serve`: raw-byte exchanges (tiles and sprites are
/// compared byte for byte with the upstream's) and waiting for a pack's download to end.
extension PackdServer {
    /// `/v1/resources?url=…` for `url`, percent-encoded as one query value.
    static func resourcePath(_ url: String, fetch: Bool) -> String {
        "/v1/resources?url=" + (url.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") + (fetch ? "&fetch=true" : "")
    }

    /// One request whose answer keeps its body as bytes.
    func exchange(_ method: String, _ path: String, json: Any? = nil) throws -> BinaryExchange {
        try BinaryExchange.send(port: port, method: method, path: path,
                              body: try json.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data())
    }

    /// The pack's document, or nil while packd does not answer with one.
    func pack(_ id: Int) -> [String: Any]? {
        try? exchange("GET", "/v1/packs/\(id)").decodedJSON()
    }

    /// Polls the pack until it is `complete` or `failed`; returns its last document.
    func waitForEnd(_ packID: Int) -> [String: Any] {
        var last: [String: Any] = [:]
        _ = eventually {
            guard let pack = pack(packID) else { return false }
            last = pack
            return ["complete", "failed"].contains(pack["state"] as? String ?? "")
        }
        return last
    }
}

extension BinaryExchange {
    /// The JobsTests' requests: `Content-Type: application/json` and a `Content-Length` on every
    /// one, `headers` as `Name: value` lines, answers not recorded for the openapi check.
    static func send(port: Int, method: String, path: String, body: Data = Data(), headers: [String] = [],
                     until: (([UInt8]) -> Bool)? = nil) throws -> BinaryExchange {
        var fields = ["Content-Type": "application/json"]
        for line in headers {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return try send(port: port, method, path, headers: fields, body: Array(body), records: false, until: until)
    }
}
