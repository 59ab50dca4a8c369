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
    func exchange(_ method: String, _ path: String, json: Any? = nil) throws -> HTTPExchange {
        try HTTPExchange.send(port: port, method: method, path: path,
                              body: try json.map { try JSONSerialization.data(withJSONObject: $0) } ?? Data())
    }

    /// The pack's document, or nil while packd does not answer with one.
    func pack(_ id: Int) -> [String: Any]? {
        try? exchange("GET", "/v1/packs/\(id)").json()
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
