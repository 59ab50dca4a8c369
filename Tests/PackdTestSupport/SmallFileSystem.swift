import Foundation
import Glibc

/// A tmpfs of a chosen size mounted on a fresh directory: a real file system that answers ENOSPC
/// (SQLite: SQLITE_FULL) once it is full, and that `resize` grows again without touching the
/// files on it ("space is freed"). Mounting needs root (CI and the dev machines run as root);
/// `available` says whether it works here, so a test can skip with that reason.
public final class SmallFileSystem {
    public let directory: URL
    private var mounted = false

    /// Whether this process can mount a tmpfs (checked once, by mounting one).
    public static let available: Bool = {
        guard geteuid() == 0 else { return false }
        guard let probe = try? SmallFileSystem(bytes: 1 << 20) else { return false }
        probe.unmount()
        return true
    }()

    public init(bytes: Int) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-small-fs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Self.mount(["-t", "tmpfs", "-o", "size=\(bytes),mode=0755", "tmpfs", directory.path])
        mounted = true
    }

    deinit { unmount() }

    /// Bytes in use on the file system.
    public var usedBytes: Int {
        var stats = statvfs()
        guard statvfs(directory.path, &stats) == 0 else { return 0 }
        return Int(stats.f_blocks - stats.f_bfree) * Int(stats.f_frsize)
    }

    /// Changes the size, keeping every file (a tmpfs cannot shrink below what it holds).
    public func resize(to bytes: Int) throws {
        try Self.mount(["-o", "remount,size=\(bytes)", directory.path])
    }

    public func unmount() {
        guard mounted else { return }
        mounted = false
        try? Self.mount(["-l", directory.path], command: "/bin/umount")
        try? FileManager.default.removeItem(at: directory)
    }

    private static func mount(_ arguments: [String], command: String = "/bin/mount") throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ClientFailure(description: "\(command) \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
