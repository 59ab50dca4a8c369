/// Reads a `text/event-stream` body as it arrives (the WHATWG rules): lines end in LF, CRLF or
/// CR; `event`, `data` (lines joined with LF) and `id` fields; comments (heartbeats) and
/// `retry` ignored; an event is dispatched at a blank line when it has data. A line longer than
/// `maximumLineBytes` (or an event's data) is a broken stream, not something to buffer without end.
struct ServerSentEventParser {
    struct Event: Equatable {
        var id: String?
        var type: String
        var data: [UInt8]
    }

    static let maximumLineBytes = 16 << 20

    private var line: [UInt8] = []
    private var lastWasCR = false
    private var type = ""
    private var data: [UInt8] = []
    private var hasData = false
    /// The last `id` field seen (it persists across events, as `Last-Event-ID` does).
    private(set) var lastEventID: String?
    private var eventHasID = false

    struct LineTooLong: Error {}

    /// The events completed by `bytes`.
    mutating func feed(_ bytes: [UInt8]) throws -> [Event] {
        var events: [Event] = []
        for byte in bytes {
            if lastWasCR {
                lastWasCR = false
                if byte == 0x0A { continue }
            }
            switch byte {
            case 0x0A, 0x0D:
                lastWasCR = byte == 0x0D
                if let event = try endLine() { events.append(event) }
            default:
                guard line.count < Self.maximumLineBytes else { throw LineTooLong() }
                line.append(byte)
            }
        }
        return events
    }

    private mutating func endLine() throws -> Event? {
        defer { line.removeAll(keepingCapacity: line.count < 1 << 16) }
        if line.isEmpty {
            defer {
                type = ""
                data = []
                hasData = false
                eventHasID = false
            }
            guard hasData else { return nil }
            return Event(id: eventHasID ? lastEventID : nil, type: type.isEmpty ? "message" : type, data: data)
        }
        if line.first == UInt8(ascii: ":") { return nil }
        let colon = line.firstIndex(of: UInt8(ascii: ":"))
        let name = String(decoding: line[..<(colon ?? line.endIndex)], as: UTF8.self)
        var value = colon.map { Array(line[line.index(after: $0)...]) } ?? []
        if value.first == UInt8(ascii: " ") { value.removeFirst() }
        switch name {
        case "event": type = String(decoding: value, as: UTF8.self)
        case "data":
            guard data.count + value.count < Self.maximumLineBytes else { throw LineTooLong() }
            if hasData { data.append(0x0A) }
            data += value
            hasData = true
        case "id" where !value.contains(0):
            lastEventID = String(decoding: value, as: UTF8.self)
            eventHasID = true
        default: break
        }
        return nil
    }
}
