import Packs
import Foundation
import Store

/// Arbitrary bytes as an uploaded database: `ValidatedImport.check` must refuse them with an
/// `ImportError` or accept them, never crash, and leave nothing behind but what it owns.
enum ImportTarget {
    static let directory: String = {
        let path = NSTemporaryDirectory() + "packd-fuzz-import-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }()

    static func run(_ bytes: [UInt8]) {
        let upload = directory + "/upload.sqlite"
        guard FileManager.default.createFile(atPath: upload, contents: Data(bytes)) else {
            fatalError("cannot write \(upload)")
        }
        var limits = UploadLimits()
        limits.maximumBytes = 1 << 20
        limits.maximumBlobBytes = 64 << 10
        do {
            let validated = try ValidatedImport.check(path: upload, limits: limits, scratchDirectory: directory)
            invariant(FileManager.default.fileExists(atPath: validated.path), "accepted file is gone")
        } catch {
            _ = error.description
        }
        // Released: an upgraded copy is deleted, so only the upload is left.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        invariant(left.allSatisfy { $0.hasPrefix("upload.sqlite") }, "scratch files left: \(left)")
    }
}
