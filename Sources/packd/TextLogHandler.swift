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
        var line = LogOutput.timestamp()
        line += " "
        line += event.level.rawValue
        line += " "
        line += label
        line += ": "
        line += "\(event.message)"
        let extra = event.metadata ?? [:]
        if !metadata.isEmpty || !extra.isEmpty {
            let merged = metadata.merging(extra) { $1 }
            for key in merged.keys.sorted() {
                line += " \(key)=\(merged[key]!)"
            }
        }
        line += "\n"
        LogOutput.write(line)
    }
}
