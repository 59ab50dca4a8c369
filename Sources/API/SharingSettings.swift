import Foundation
import Store

/// Settings of the export and import endpoints: where temporary files go, how large an upload
/// may be, how many transfers build or check files at once.
public struct SharingSettings: Sendable {
    /// Exports are built and uploads stored here, then removed once answered.
    public var scratchDirectory: String
    /// The untrusted upload's limits; `maximumBytes` is also the route's body limit (413).
    public var importLimits: ValidatedImport.Limits
    /// Concurrent exports plus imports; more get 503.
    public var concurrentTransfers: Int
    /// How long building an export or merging an import may take before the answer starts.
    public var handlerTimeout: Duration

    public init(scratchDirectory: String = SharingSettings.defaultScratchDirectory,
                importLimits: ValidatedImport.Limits = ValidatedImport.Limits(),
                concurrentTransfers: Int = 2, handlerTimeout: Duration = .seconds(3600)) {
        self.scratchDirectory = scratchDirectory
        self.importLimits = importLimits
        self.concurrentTransfers = concurrentTransfers
        self.handlerTimeout = handlerTimeout
    }

    /// `$TMPDIR`, else `/tmp`.
    public static var defaultScratchDirectory: String {
        let directory = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        return directory.hasSuffix("/") && directory.count > 1 ? String(directory.dropLast()) : directory
    }

    /// A new, unique path in the scratch directory.
    func scratchPath(_ prefix: String, _ fileExtension: String) -> String {
        scratchDirectory + "/packd-\(prefix)-\(UUID().uuidString).\(fileExtension)"
    }
}
