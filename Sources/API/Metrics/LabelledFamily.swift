import Foundation

/// The children of one labelled metric, created on first use and capped in number.
final class LabelledFamily<Instrument: AnyObject & Sendable>: Sendable {
    private let names: [String]
    private let make: @Sendable ([(String, String)]) -> Instrument
    private let children = LockedTable<[String], Instrument>()

    init(names: [String], make: @escaping @Sendable ([(String, String)]) -> Instrument) {
        self.names = names
        self.make = make
    }

    func child(_ values: String...) -> Instrument {
        children.value(for: values, limit: PackdMetrics.maxLabelValues) { values in
            make(Array(zip(names, values.map(Self.sanitized))))
        } overflow: {
            Array(repeating: "other", count: names.count)
        }
    }

    /// Label values are free text in the format, but a bounded printable form keeps the
    /// exposition readable and parsers happy.
    private static func sanitized(_ value: String) -> String {
        let cleaned = value.unicodeScalars.prefix(128).map { $0.isASCII && $0.value >= 0x20 && $0 != "\"" && $0 != "\\" ? Character($0) : "_" }
        return String(cleaned)
    }
}

/// A dictionary behind a lock, for the few tables touched by several threads.
final class LockedTable<Key: Hashable & Sendable, Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var table: [Key: Value] = [:]

    /// The value for `key`, made by `make` on first use; beyond `limit` entries, the value for
    /// `overflow()`'s key instead.
    func value(for key: Key, limit: Int, make: (Key) -> Value, overflow: () -> Key) -> Value {
        lock.lock()
        defer { lock.unlock() }
        if let existing = table[key] { return existing }
        let key = table.count < limit ? key : overflow()
        if let existing = table[key] { return existing }
        let value = make(key)
        table[key] = value
        return value
    }
}
