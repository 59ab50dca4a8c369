import Foundation
import Testing
import Packs

/// A pack's state is a `PackState` everywhere: outside `Sources/Packs` no production line spells
/// one as a string literal (a literal there would bypass the lifecycle's rules unseen).
@Suite struct StateLiteralTests {
    @Test func noPackStateStringLiteralOutsideTheDomainModule() throws {
        let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Sources")
        let states = PackState.allCases.map { "\"\($0.rawValue)\"" }
        var offending: [String] = []
        let files = FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil)
        var scanned = 0
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift", !file.path.contains("/Sources/Packs/") else { continue }
            scanned += 1
            let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
            for (number, line) in lines.enumerated() where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                if states.contains(where: { line.contains($0) }) {
                    offending.append("\(file.path.split(separator: "/Sources/").last ?? ""):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(scanned > 100, "the sources were not found at \(sources.path)")
        #expect(offending.isEmpty, "pack states as string literals:\n\(offending.joined(separator: "\n"))")
    }
}
