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
        if !metadata.isEmpty || !extra.isEmpty {
            let merged = metadata.merging(extra) { $1 }
            for key in merged.keys.sorted() {
                line.append(contentsOf: " \(key)=\(merged[key]!)".utf8)
            }
        }
        line.append(UInt8(ascii: "\n"))
        line.withUnsafeBytes { LogOutput.write($0) }
    }
}
