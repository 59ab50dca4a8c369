import Logging

/// A swift-log handler writing one JSON object per line to standard error (`--log-format json`),
/// for log collectors that parse structured lines. Keys: `time` (RFC 3339, UTC, milliseconds),
/// `level`, `label`, `message`, then metadata (numbers and booleans unquoted).
struct JSONLogHandler: LogHandler {
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
        var merged = metadata
        if let extra = event.metadata { merged.merge(extra) { $1 } }
        let line = Self.line(time: LogOutput.timestamp(), level: event.level, label: label, message: "\(event.message)", metadata: merged)
        LogOutput.write(line)
    }

    static func line(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> String {
        var out = "{\"time\":\"\(time)\",\"level\":\"\(level.rawValue)\",\"label\":"
        appendQuoted(label, to: &out)
        out += ",\"message\":"
        appendQuoted(message, to: &out)
        for key in metadata.keys.sorted() where !["time", "level", "label", "message"].contains(key) {
            out += ","
            appendQuoted(key, to: &out)
            out += ":"
            appendValue(metadata[key]!, to: &out)
        }
        out += "}\n"
        return out
    }

    private static func appendValue(_ value: Logger.Metadata.Value, to out: inout String) {
        switch value {
        case .string(let text):
            appendQuoted(text, to: &out)
        case .stringConvertible(let convertible):
            if let number = jsonNumber(convertible) {
                out += number
            } else {
                appendQuoted(convertible.description, to: &out)
            }
        case .array(let values):
            out += "["
            for (index, element) in values.enumerated() {
                if index > 0 { out += "," }
                appendValue(element, to: &out)
            }
            out += "]"
        case .dictionary(let dictionary):
            out += "{"
            for (index, key) in dictionary.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                appendQuoted(key, to: &out)
                out += ":"
                appendValue(dictionary[key]!, to: &out)
            }
            out += "}"
        }
    }

    /// Integers, finite doubles and booleans stay numbers and booleans (`"status":200`), so a log
    /// collector can compare and sum them; anything else is a string.
    private static func jsonNumber(_ value: any CustomStringConvertible) -> String? {
        switch value {
        case let value as Int: String(value)
        case let value as Int64: String(value)
        case let value as Int32: String(value)
        case let value as UInt64: String(value)
        case let value as UInt32: String(value)
        case let value as Double where value.isFinite: "\(value)"
        case let value as Bool: value ? "true" : "false"
        default: nil
        }
    }

    /// JSON string escaping (RFC 8259 §7): quotes, backslash and control characters.
    static func appendQuoted(_ text: String, to out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case let control where control.value < 0x20:
                let hex = String(control.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
    }
}
