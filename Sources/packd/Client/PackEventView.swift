import Packs

/// What `wait` does with a followed pack's events: a progress bar for a person at a terminal
/// (`ProgressBar`), one JSON object per line for logs and CI (`EventLines`).
protocol PackEventView: AnyObject {
    /// One event; `id` is the stream's event id (nil for one made up from a poll).
    func show(_ event: PackEvent, id: Int64?)
    /// The wait is over.
    func finish()
}

/// One line per event on standard output, `{"event": kind, "id": n, "data": {...}}`, where
/// `data` is the event's document exactly as the stream carried it (Packs' wire types), so
/// `PackEvent(kind: event, data: data)` reads a line back. `id` is absent for events made up
/// from polling. Each line is written as it happens.
final class EventLines: PackEventView {
    private struct Line: Encodable {
        let event: PackEvent

        let id: Int64?

        private enum CodingKeys: String, CodingKey { case event, id, data }

        func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(event.kind, forKey: .event)
            try container.encodeIfPresent(id, forKey: .id)
            try container.encode(event.payload, forKey: .data)
        }
    }

    func show(_ event: PackEvent, id: Int64?) {
        guard let bytes = try? SortedJSONEncoder.encode(Line(event: event, id: id)) else { return }
        Terminal.standardOutput(line: bytes)
    }

    func finish() {}
}
