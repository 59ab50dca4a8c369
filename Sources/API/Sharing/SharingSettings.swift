import Foundation
import Packs

/// Settings of the export and import endpoints: where temporary files go, how large an upload
/// may be, how many transfers build or check files at once.
public struct SharingSettings: Sendable {
    /// Exports are built and uploads stored here, then removed once answered.
    public var scratchDirectory: String
    /// The untrusted upload's limits; `maximumBytes` is also the route's body limit (413).
    public var importLimits: UploadLimits
    /// Concurrent exports plus imports; more get 503.
    public var concurrentTransfers: Int
    /// How long building an export or merging an import may take before the answer starts.
    public var handlerTimeout: Duration
    /// Where artifacts (immutable exports of pack versions) are kept; nil: a folder of this
    /// process in the scratch directory (`packd serve` puts it beside the database).
    public var artifactsDirectory: String?
    /// The artifacts directory's byte budget (least recently used files go first); nil: none.
    public var artifactsMaximumBytes: Int?

    public init(scratchDirectory: String = SharingSettings.defaultScratchDirectory,
                importLimits: UploadLimits = UploadLimits(),
                concurrentTransfers: Int = 2, handlerTimeout: Duration = .seconds(3600)) {
        self.scratchDirectory = scratchDirectory
        self.importLimits = importLimits
        self.concurrentTransfers = concurrentTransfers
        self.handlerTimeout = handlerTimeout
    }

    /// The artifacts directory in use: `artifactsDirectory`, else one named after this process
    /// in the scratch directory (removed with the abandoned scratch files once the process is gone).
    func resolvedArtifactsDirectory() -> String {
        artifactsDirectory ?? scratchDirectory + "/packd-\(getpid())-artifacts"
    }

    /// `$TMPDIR`, else `/tmp`.
    public static var defaultScratchDirectory: String {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
    }

    /// A new, unique path in the scratch directory, named after this process (`packd-PID-…`) so a
    /// later packd can tell a file whose process is gone from one still in use.
    func scratchPath(_ prefix: String, _ fileExtension: String) -> String {
        scratchDirectory + "/packd-\(getpid())-\(prefix)-\(UUID().uuidString).\(fileExtension)"
    }

    /// Removes the scratch files of packd processes that no longer exist: a process killed while
    /// building an export or receiving an upload never removes its file, and exports are the size
    /// of a pack. Files of running processes (another packd sharing the directory) are kept.
    /// Returns the names removed. Disk work: call it before the loop runs, or off it.
    public func removeAbandonedScratchFiles() -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: scratchDirectory) else { return [] }
        return names.filter { name in
            guard let pid = Self.scratchOwner(name), pid != getpid(), kill(pid, 0) == -1, errno == ESRCH else { return false }
            return (try? FileManager.default.removeItem(atPath: scratchDirectory + "/" + name)) != nil
        }
    }

    /// The process a `packd-PID-…` scratch name belongs to.
    static func scratchOwner(_ name: String) -> pid_t? {
        let parts = name.split(separator: "-", maxSplits: 2)
        guard parts.count == 3, parts[0] == "packd", let pid = pid_t(parts[1]), pid > 0 else { return nil }
        return pid
    }
}
