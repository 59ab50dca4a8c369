import Foundation

extension PackEvent {
    /// Decodes an event from its `event:` type and `data:` document (a client reading a stream).
    public init(kind: String, data: Data) throws {
        guard let kind = Kind(rawValue: kind) else {
            throw DecodingError.dataCorrupted(.init(codingPath: [], debugDescription: "unknown event type \(kind)"))
        }
        let decoder = JSONDecoder()
        switch kind {
        case .progress: self = .progress(try decoder.decode(ProgressEvent.self, from: data))
        case .state: self = .state(try decoder.decode(StateEvent.self, from: data))
        case .resourceError: self = .resourceError(try decoder.decode(ResourceErrorEvent.self, from: data))
        case .tileLimitExceeded: self = .tileLimitExceeded(try decoder.decode(TileLimitExceededEvent.self, from: data))
        case .packRemoved: self = .packRemoved(try decoder.decode(PackRemovedEvent.self, from: data))
        case .versionCreated: self = .versionCreated(try decoder.decode(VersionCreatedEvent.self, from: data))
        case .startAreaReady: self = .startAreaReady(try decoder.decode(StartAreaReadyEvent.self, from: data))
        }
    }
}
