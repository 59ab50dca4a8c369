import Foundation
import PackdTestSupport
import Testing

/// What the end-to-end API proofs share: creating a pack on a real `packd serve` from a
/// `MapUpstream`, waiting on its state, and reading events' JSON.
enum APIProof {
    /// An upstream that answers `tiles` tiles, then holds the rest, and a packd to download from it;
    /// `finish` them with `end`.
    static func start(holdingTilesAfter tiles: Int, arguments: [String] = []) throws -> (MapUpstream, PackdServer) {
        let upstream = try MapUpstream()
        upstream.holdTiles(after: tiles)
        do {
            return (upstream, try PackdServer(arguments: arguments))
        } catch {
            upstream.stop()
            throw error
        }
    }

    static func end(_ upstream: MapUpstream, _ server: PackdServer) {
        server.remove()
        upstream.stop()
    }

    /// Creates a started pack of `upstream`'s map over zooms 0…`maxZoom`; returns its id.
    static func createPack(_ server: PackdServer, _ upstream: MapUpstream, maxZoom: Int, name: String = "proof") throws -> Int {
        let reply = try server.send("POST", "/v1/packs", json: ["name": name, "start": true,
                                                               "region": PackDownloadTests.region(upstream, maxZoom: maxZoom)])
        guard reply.status == 201, let id = reply.json["id"] as? Int else {
            throw ClientFailure(description: "create answered \(reply.status): \(reply.body)")
        }
        return id
    }

    /// The pack document, polled until `condition` holds (`seconds`, 60 by default).
    @discardableResult
    static func waitForPack(_ server: PackdServer, _ packID: Int, within seconds: Double = 60,
                            _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
        var last: [String: Any] = [:]
        let held = eventually(within: seconds) {
            guard let pack = try? server.send("GET", "/v1/packs/\(packID)").json else { return false }
            last = pack
            return condition(pack)
        }
        guard held else { throw ClientFailure(description: "pack \(packID) never got there: \(last)") }
        return last
    }

    static func state(_ pack: [String: Any]) -> String { pack["state"] as? String ?? "" }

    static func progress(_ pack: [String: Any], _ field: String) -> Int {
        (pack["progress"] as? [String: Any])?[field] as? Int ?? -1
    }

    static func data(_ event: StreamClient.Event) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(event.data.utf8))) as? [String: Any] ?? [:]
    }

    /// Reads `stream` until a `state` event says `state` for `packID`; returns every event read.
    static func readUntilState(_ stream: StreamClient, _ state: String, packID: Int) throws -> [StreamClient.Event] {
        try stream.events { event in
            event.type == "state" && data(event)["state"] as? String == state && data(event)["pack_id"] as? Int == packID
        }
    }
}
