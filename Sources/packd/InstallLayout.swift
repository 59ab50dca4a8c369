import Foundation

/// Where packd looks for the files it ships beside its binary (`openapi.yaml`, the dashboard,
/// MapLibre GL JS), in order:
/// 1. the working directory (`make run`, the Docker image's `/app`);
/// 2. the directories above the executable (`.build/<triple>/<config>/packd` sits three levels
///    under the repository root, whose `.build/` holds what `make dashboard-assets` installs);
/// 3. `<prefix>/share/packd/` for an executable in `<prefix>/bin/` (`make install`).
enum InstallLayout {
    static func candidates(_ relativePath: String) -> [String] {
        var list = [FileManager.default.currentDirectoryPath + "/" + relativePath]
        let executable = URL(fileURLWithPath: CommandLine.arguments.first ?? "").resolvingSymlinksInPath()
        var directory = executable.deletingLastPathComponent()
        let share = directory.deletingLastPathComponent().appendingPathComponent("share/packd/" + relativePath).path
        for _ in 0..<4 {
            directory = directory.deletingLastPathComponent()
            list.append(directory.appendingPathComponent(relativePath).path)
        }
        list.append(share)
        return list
    }
}
