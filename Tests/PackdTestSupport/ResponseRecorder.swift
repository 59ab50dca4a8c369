import Foundation

/// Appends replies to `PACKD_RECORD_RESPONSES` for the openapi check (one JSON object a line).
public enum ResponseRecorder {
    private static let lock = NSLock()

    public static func record(method: String, target: String, status: Int, headers: [(String, String)], body: String) {
        guard let path = ProcessInfo.processInfo.environment["PACKD_RECORD_RESPONSES"] else { return }
        let line: [String: Any] = [
            "method": method, "target": target, "status": status,
            "headers": Dictionary(headers.map { ($0.0.lowercased(), $0.1) }) { first, _ in first },
            "body": body,
        ]
        guard var data = try? JSONSerialization.data(withJSONObject: line, options: [.sortedKeys]) else { return }
        data.append(0x0A)
        lock.lock()
        defer { lock.unlock() }
        if let handle = FileHandle(forWritingAtPath: path) {
            handle.seekToEndOfFile()
            handle.write(data)
            try? handle.close()
        } else {
            FileManager.default.createFile(atPath: path, contents: data)
        }
    }
}
