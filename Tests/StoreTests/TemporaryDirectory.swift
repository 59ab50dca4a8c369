import Foundation

/// A fresh directory under the system temp dir, removed when the value is released.
final class TemporaryDirectory: @unchecked Sendable {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "packd-store-tests-" + UUID().uuidString
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}
