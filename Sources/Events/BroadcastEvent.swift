import Packs

/// One numbered server-sent event about a pack, as `EventBroadcaster` fans it out and replays it.
///
/// The payload is kept as ready JSON bytes: it is encoded once by the publisher and then written to
/// hundreds of subscribers, so nobody re-encodes it per stream.
public struct BroadcastEvent: Sendable, Equatable {
    public let id: Int64
    public let kind: PackEvent.Kind
    public let packID: Int64
    /// One JSON document, the `data:` line.
    public let payload: [UInt8]

    public init(id: Int64, kind: PackEvent.Kind, packID: Int64, payload: [UInt8]) {
        self.id = id
        self.kind = kind
        self.packID = packID
        self.payload = payload
    }

    /// The `text/event-stream` frame. A line break in the payload would end the `data:` field
    /// early and let a payload forge fields, so CR and LF become spaces (JSON allows whitespace
    /// between tokens, and a valid JSON string never contains a raw line break).
    public var frame: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(payload.count + 48)
        bytes.append(contentsOf: "id: \(id)\nevent: \(kind.rawValue)\ndata: ".utf8)
        for byte in payload {
            bytes.append(byte == 0x0A || byte == 0x0D ? 0x20 : byte)
        }
        bytes.append(contentsOf: [0x0A, 0x0A])
        return bytes
    }
}

/// Which events one subscriber wants: `/v1/packs/{id}/events` or `/v1/events`.
public enum EventFilter: Sendable, Equatable, Hashable {
    case pack(Int64)
    case allPacks

    public func accepts(_ event: BroadcastEvent) -> Bool {
        accepts(packID: event.packID)
    }

    public func accepts(packID: Int64) -> Bool {
        switch self {
        case .pack(let id): packID == id
        case .allPacks: true
        }
    }
}

extension PackEvent {
    /// The `data:` document's bytes, encoded once for every stream: sorted keys, as every
    /// document packd serves.
    var encodedPayload: [UInt8] {
        (try? SortedJSONEncoder.encode(payload)) ?? Array("null".utf8)
    }
}
