import Foundation

/// Executables SwiftPM built next to the running test bundle (a test target that depends on an
/// executable target gets it built, not linked).
public enum BuiltExecutable {
    /// The path of executable `name` in the products directory, searched upward from the bundle
    /// (which may be a directory, `.xctest/...`, or a file).
    public static func path(_ name: String) -> String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        var directory = bundle.deletingLastPathComponent()
        while !directory.path.isEmpty && directory.path != "/" {
            let candidate = directory.appendingPathComponent(name).path
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
            directory = directory.deletingLastPathComponent()
        }
        return bundle.deletingLastPathComponent().appendingPathComponent(name).path
    }
}
