import Foundation
import Logging

/// Collects what a component logs (every level), so tests can assert on log lines.
public final class CapturedLog: @unchecked Sendable {
    public typealias Entry = (level: Logger.Level, message: String, metadata: Logger.Metadata)
    private let lock = NSLock()
    private var lines: [Entry] = []

    public init() {}

    public var entries: [Entry] { lock.withLock { lines } }

    public func handler() -> some LogHandler { Handler(log: self) }

    /// A logger whose lines this collects.
    public func logger(label: String = "test") -> Logger {
        Logger(label: label) { _ in self.handler() }
    }

    private struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let entry = (level: event.level, message: "\(event.message)", metadata: metadata.merging(event.metadata ?? [:]) { $1 })
            log.lock.withLock { log.lines.append(entry) }
        }
    }
}
