/// Which published artifacts to remove so the directory fits its byte budget: least recently
/// used first, never one in `keep` (being served or just built), until the total is within
/// `maximumBytes`. Pure.
public enum ArtifactEviction {
    public struct Entry: Equatable, Sendable {
        public let path: String
        public let size: Int
        /// When it was last served or built (any monotonic or wall scale, compared only).
        public let lastUsed: Int64

        public init(path: String, size: Int, lastUsed: Int64) {
            self.path = path
            self.size = size
            self.lastUsed = lastUsed
        }
    }

    public static func victims(_ entries: [Entry], maximumBytes: Int, keep: Set<String>) -> [Entry] {
        var total = entries.reduce(0) { $0 + $1.size }
        guard total > maximumBytes else { return [] }
        var victims: [Entry] = []
        for entry in entries.sorted(by: { ($0.lastUsed, $0.path) < ($1.lastUsed, $1.path) }) where !keep.contains(entry.path) {
            guard total > maximumBytes else { break }
            victims.append(entry)
            total -= entry.size
        }
        return victims
    }
}
