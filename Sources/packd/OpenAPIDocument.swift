import Foundation
import Logging

/// The repository's `openapi.yaml`, read once at start.
///
/// Looked for at `--openapi` if given; else `./openapi.yaml` (what `make run` sees), else in the
/// directories above the executable (`.build/<config>/packd` sits three levels under the
/// repository root), so the built binary finds it from any working directory.
struct OpenAPIDocument {
    let bytes: [UInt8]
    let path: String

    /// Larger than any plausible API description: refuses to load an unrelated huge file.
    static let maxBytes = 4 << 20

    static func load(configuredPath: String?, logger: Logger) -> OpenAPIDocument? {
        let candidates: [String]
        if let configuredPath {
            candidates = [configuredPath]
        } else {
            var list = [FileManager.default.currentDirectoryPath + "/openapi.yaml"]
            var directory = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath().deletingLastPathComponent()
            for _ in 0..<4 {
                directory = directory.deletingLastPathComponent()
                list.append(directory.appendingPathComponent("openapi.yaml").path)
            }
            candidates = list
        }
        for path in candidates {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            guard data.count <= maxBytes else {
                logger.error("\(path) is larger than \(maxBytes) bytes; not serving it")
                return nil
            }
            logger.info("serving /openapi.yaml from \(path)")
            return OpenAPIDocument(bytes: Array(data), path: path)
        }
        logger.warning("openapi.yaml not found (looked at \(candidates.joined(separator: ", "))); /openapi.yaml answers 404")
        return nil
    }
}
