import Packs

/// The `data` of a webhook about a pack: the pack document as `GET /v1/packs/{id}` showed it when
/// the change committed, rendered from the snapshot the store took in that transaction — the
/// renderer `packd` gives the webhook dispatcher.
public enum WebhookPackDocument {
    @Sendable public static func render(_ snapshot: WebhookPackSnapshot) -> [UInt8]? {
        JSONBody.encode(PackDocument.pack(snapshot.record, progress: snapshot.progress))
    }
}
