import Logging

/// The default `--log-format text`: `time level label: message key=value ...`, one line each.
/// Replaces swift-log's StreamLogHandler, whose stdio locking and flush per line made the access
/// log the most expensive part of answering `/healthz`.
struct TextLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    init(label: String) {
        self.label = label
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        // Built as bytes and written as is: no intermediate strings for the access line.
        var line: [UInt8] = []
        line.reserveCapacity(160)
        LogOutput.appendTimestamp(to: &line)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: event.level.rawValue.utf8)
        line.append(UInt8(ascii: " "))
        line.append(contentsOf: label.utf8)
        line.append(contentsOf: ": ".utf8)
        line.append(contentsOf: event.message.description.utf8)
        let extra = event.metadata ?? [:]
        // The access line's fields come as event metadata with none on the handler: no merge.
        let fields = metadata.isEmpty ? extra : metadata.merging(extra) { $1 }
        for key in fields.keys.sorted() {
            line.append(UInt8(ascii: " "))
            line.append(contentsOf: key.utf8)
            line.append(UInt8(ascii: "="))
            switch fields[key]! {
            case .string(let text): line.append(contentsOf: text.utf8)
            case .stringConvertible(let value): line.append(contentsOf: value.description.utf8)
            case let other: line.append(contentsOf: other.description.utf8)
            }
        }
        line.append(UInt8(ascii: "\n"))
        line.withUnsafeBytes { LogOutput.write($0) }
    }
}
