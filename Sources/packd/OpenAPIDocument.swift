import Foundation
import Logging

/// The repository's `openapi.yaml`, read once at start.
///
/// Looked for at `--openapi` if given, else where `InstallLayout` says, so the built binary
/// finds it from any working directory.
struct OpenAPIDocument {
    let bytes: [UInt8]
    let path: String

    /// Larger than any plausible API description: refuses to load an unrelated huge file.
    static let maxBytes = 4 << 20

    static func load(configuredPath: String?, logger: Logger) -> OpenAPIDocument? {
        let candidates = configuredPath.map { [$0] } ?? InstallLayout.candidates("openapi.yaml")
        for path in candidates {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            guard data.count <= maxBytes else {
                logger.error("openapi.yaml is too large; not serving it", metadata: ["path": "\(path)", "maximum_bytes": "\(maxBytes)"])
                return nil
            }
            logger.info("serving /openapi.yaml", metadata: ["path": "\(path)"])
            return OpenAPIDocument(bytes: Array(data), path: path)
        }
        logger.warning("openapi.yaml not found; /openapi.yaml answers 404", metadata: ["looked_at": "\(candidates.joined(separator: ", "))"])
        return nil
    }
}
