import Foundation
import Packs
import Server

/// `Idempotency-Key` on `POST /v1/packs`: a retried creation answers with the first one's stored
/// response instead of making a second pack (api.md, "Packs").
///
/// A key is scoped to the caller (a digest of its `Authorization`), so the same key from two
/// clients names two requests; a retry while the first is still running gets `409`
/// (`idempotency-key-in-use`), one with another body `422` (`idempotency-key-reused`). The stored
/// answers live `retention` seconds (the store keeps them with the pack it made). Loop thread only.
final class IdempotencyKeys {
    /// How long a stored answer is honoured.
    static let retention: Int64 = 86_400

    /// One creation holding a scoped key until it is answered.
    struct Claim: Sendable {
        /// The caller's scope and the key, as stored.
        let scopedKey: String
        /// SHA-256 of the body, hex: a retry must send the same.
        let requestHash: String
    }

    /// Scoped keys of creations still running.
    private var inFlight: Set<String> = []

    /// Claims the request's key (nil: the request has none), or the problem to answer with: a key
    /// of the wrong length, or one whose first request is still running.
    func claim(_ request: HTTPRequest) throws(Problem) -> Claim? {
        guard let key = request.headers["Idempotency-Key"] else { return nil }
        guard (1...255).contains(key.utf8.count) else {
            throw Problem(.malformedRequest, detail: "Idempotency-Key must be 1 to 255 characters")
        }
        let scope = Self.hex(SHA256.hash(Array((request.headers["Authorization"] ?? "").utf8)).prefix(8))
        let scopedKey = scope + ":" + key
        guard inFlight.insert(scopedKey).inserted else {
            throw Problem(.idempotencyKeyInUse, detail: "a request with this Idempotency-Key is still being processed")
        }
        return Claim(scopedKey: scopedKey, requestHash: Self.hex(SHA256.hash(request.body)))
    }

    /// The creation holding `claim` was answered (or failed): a retry may run.
    func release(_ claim: Claim?) {
        if let claim { inFlight.remove(claim.scopedKey) }
    }

    /// The stored answer of `claim`'s key if it is still honoured at `now`. Pool thread.
    static func storedAnswer(_ claim: Claim, reader: any StoreReading, now: Int64) throws -> IdempotencyEntry? {
        guard let entry = try reader.idempotencyEntry(claim.scopedKey), entry.createdAt >= now - retention else { return nil }
        return entry
    }

    /// Keeps `body` as the answer to `claim`'s key, in the transaction that made the pack.
    static func store(_ claim: Claim, packID: Int64, body: [UInt8], into database: any MutablePackRepository, now: Int64) throws {
        try database.storeIdempotencyKey(claim.scopedKey, requestHash: claim.requestHash, packID: packID, status: 201,
                                         body: body, now: now, retention: retention)
    }

    /// The first request's answer again, or `422` when this one's body differs.
    static func replay(_ entry: IdempotencyEntry, for claim: Claim) -> HTTPResponse {
        guard entry.requestHash == claim.requestHash else {
            return .problem(Problem(.idempotencyKeyReused, detail: "this Idempotency-Key was used with a different body"))
        }
        var headers: HTTPHeaders = ["Content-Type": "application/json", "Idempotent-Replayed": "true", "ETag": PackDocument.etag(of: entry.body)]
        if let packID = entry.packID { headers.set("Location", "/v1/packs/\(packID)") }
        return HTTPResponse(status: HTTPStatus(Int(entry.status), entry.status == 201 ? "Created" : "OK"), headers: headers, body: entry.body)
    }

    private static func hex(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}
