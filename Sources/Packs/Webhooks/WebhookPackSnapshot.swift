import Foundation

/// A pack as it was when a webhook message about it was written: its row and progress, read in
/// the transaction of the change. The message keeps it (JSON, `data`), and the dispatcher renders
/// the pack document from it for each attempt with the API's own renderer, so `data` is the pack
/// as `GET /v1/packs/{id}` showed it at that moment — even for a pack removed since.
public struct WebhookPackSnapshot: Sendable, Equatable, Codable {
    public var record: PackRecord
    public var progress: StoredProgress

    public init(record: PackRecord, progress: StoredProgress) {
        self.record = record
        self.progress = progress
    }

    /// The stored form.
    public var json: String {
        PackRecord.encodeJSON(self) ?? "{}"
    }

    public static func decode(_ json: String) -> WebhookPackSnapshot? {
        try? JSONDecoder().decode(WebhookPackSnapshot.self, from: Data(json.utf8))
    }
}
