import Packs
import Plan

/// The documents a pack stored, as a document phase reads them: a revalidation rebuilds each
/// tile template's scheme and subdomains from the stored style and TileJSONs (the `tiles` table
/// keeps only the template string). A document that is missing or unreadable is a failure the
/// phase, in best-effort mode, skips.
final class StoredDocuments: DocumentSource {
    private let store: any PackStore

    init(store: any PackStore) {
        self.store = store
    }

    func document(_ resource: PlannedResource, then: @escaping (Result<[UInt8], DocumentFailure>) -> Void) {
        let key = ResourceKey.resource(url: resource.url, kind: resource.kind)
        store.read({ reader -> [UInt8]? in
            guard let body = try reader.resource(key, linkedTo: nil)?.body else { return nil }
            return try body.decoded()
        }) { result in
            switch result {
            case .success(let bytes?): then(.success(bytes))
            case .success(nil), .failure:
                then(.failure(.unavailable(url: resource.url, status: nil, detail: "not stored")))
            }
        }
    }
}

/// A 200's body against the stored copy, compared decoded, so a gzip and a plain copy of the
/// same bytes are the same.
enum BodyComparison: Sendable {
    /// The stored content (the stored copy stays).
    case same
    /// Other bytes (or nothing was stored): the new stored form.
    case changed(StoredBody)
    /// A gzip body that does not inflate.
    case undecodable

    /// On a reading thread.
    static func compare(_ body: [UInt8], with key: ResourceKey, in reader: any StoreReading) -> BodyComparison {
        // A style is stored (and so compared) naming its archives by key.
        let body = if case .resource(let url, .style) = key { StoredStyleBody.body(body, url: url) } else { body }
        guard let encoded = try? StoredBody.encoding(body) else { return .undecodable }
        let stored = (try? reader.resource(key, linkedTo: nil)) ?? nil
        guard let storedBody = stored?.body else { return .changed(encoded) }
        if storedBody == encoded { return .same }
        guard let old = try? storedBody.decoded(), let new = try? encoded.decoded() else { return .changed(encoded) }
        return old == new ? .same : .changed(encoded)
    }
}
