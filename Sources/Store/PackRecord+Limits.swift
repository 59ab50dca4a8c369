import Foundation

extension PackRecord {
    /// `max_tiles` of the pack's stored `limits` (`{"max_tiles": n, ...}`), nil when unset or unreadable.
    public var maxTiles: Int64? { limit("max_tiles") }

    /// `max_bytes_per_second` of the pack's stored `limits`, nil when unset, unreadable or below 1.
    public var maxBytesPerSecond: Int64? { limit("max_bytes_per_second").flatMap { $0 >= 1 ? $0 : nil } }

    private func limit(_ name: String) -> Int64? {
        guard let limitsJSON,
              let object = try? JSONSerialization.jsonObject(with: Data(limitsJSON.utf8)) as? [String: Any],
              let value = object[name] as? NSNumber else { return nil }
        return value.int64Value
    }
}
