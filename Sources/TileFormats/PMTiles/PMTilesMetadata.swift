import Foundation

/// The archive's JSON metadata (its TileJSON-like fields: `name`, `attribution`, `vector_layers`…),
/// stored with the internal compression.
public enum PMTilesMetadata {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        case undecodable(String)
        case notAnObject

        public var description: String {
            switch self {
            case .undecodable(let detail): "the metadata cannot be read: \(detail)"
            case .notAnObject: "the metadata is not a JSON object"
            }
        }
    }

    /// The metadata object; empty for an archive without metadata. Inflation is capped at
    /// `inflatedLimit`, and JSON nesting is bounded by Foundation's parser.
    public static func object(_ stored: [UInt8], compression: PMTilesHeader.Compression,
                              inflatedLimit: Int) throws(Failure) -> [String: Any] {
        guard !stored.isEmpty else { return [:] }
        let text: [UInt8]
        switch compression {
        case .none:
            guard stored.count <= inflatedLimit else { throw .undecodable("larger than \(inflatedLimit) bytes") }
            text = stored
        case .gzip:
            do {
                text = try Inflater(.gzip).inflated(stored, limit: inflatedLimit)
            } catch {
                throw .undecodable("\(error)")
            }
        default:
            throw .undecodable("\(compression) compression")
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(text)) else {
            throw .undecodable("not JSON")
        }
        guard let dictionary = object as? [String: Any] else { throw .notAnObject }
        return dictionary
    }
}
