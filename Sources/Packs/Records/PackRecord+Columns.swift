import Foundation

/// How a `PackRecord`'s JSON columns (`error`, `limits`) are written and read by every store, so
/// a pack reads back the same from SQLite and PostgreSQL.
extension PackRecord {
    /// The `error` column's JSON; an unreadable one still tells that the pack failed.
    public static func decodeError(_ json: String) -> PackError? {
        (try? JSONDecoder().decode(PackError.self, from: Data(json.utf8)))
            ?? PackError(.internalError, "the stored error is unreadable: \(json.prefix(200))")
    }

    public static func decodeLimits(_ json: String) -> PackLimits? {
        try? JSONDecoder().decode(PackLimits.self, from: Data(json.utf8))
    }

    public static func decodeStartArea(_ json: String) -> StartArea? {
        try? JSONDecoder().decode(StartArea.self, from: Data(json.utf8))
    }

    public static func decodeSkippedGlyphRanges(_ json: String) -> SkippedGlyphRanges? {
        try? JSONDecoder().decode(SkippedGlyphRanges.self, from: Data(json.utf8))
    }

    /// The columns' JSON: sorted keys, as the API writes documents.
    public static func encodeJSON(_ value: some Encodable) -> String? {
        (try? SortedJSONEncoder.encode(value)).map { String(decoding: $0, as: UTF8.self) }
    }
}
