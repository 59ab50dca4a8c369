import Foundation

/// The artifacts directory on disk: finding a published file, publishing a built one (fsync,
/// rename, fsync of the folder: a crash leaves either no file under the published name or the
/// whole one), listing and removing. Every method blocks: call them on a pool thread, never on
/// the loop.
public struct ArtifactDirectory: Sendable {
    public let path: String

    public init(path: String) {
        self.path = path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path
    }

    /// The published artifact of `key`, or nil when there is none (never built, evicted, or the
    /// directory was removed by hand).
    public func find(_ key: ArtifactKey) -> Artifact? {
        let folder = path + "/" + key.versionFolder
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return nil }
        for name in names {
            guard let hex = ArtifactFileName.digest(in: name, of: key) else { continue }
            var info = stat()
            guard stat(folder + "/" + name, &info) == 0 else { continue }
            return Artifact(key: key, path: folder + "/" + name, size: Int(info.st_size), sha256: hex)
        }
        return nil
    }

    /// A new temporary path for building `key` (its folder created).
    public func temporaryPath(for key: ArtifactKey) throws(ArtifactError) -> String {
        let folder = path + "/" + key.versionFolder
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw .file("creating \(folder): \(error.localizedDescription)")
        }
        return folder + "/" + ArtifactFileName.temporary(pid: getpid(), unique: UUID().uuidString)
    }

    /// Hashes the finished file at `temporary`, syncs it, and renames it to its published name.
    /// The digest is computed here, once per build.
    public func publish(_ temporary: String, as key: ArtifactKey) throws(ArtifactError) -> Artifact {
        let descriptor = open(temporary, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .file("opening the built artifact \(temporary): \(Self.lastError)") }
        defer { close(descriptor) }
        let (digest, size) = try Digest.sha256(ofFile: descriptor)
        guard fsync(descriptor) == 0 else { throw .file("syncing \(temporary): \(Self.lastError)") }
        let folder = path + "/" + key.versionFolder
        let final = folder + "/" + ArtifactFileName.published(key, sha256: digest.hex)
        guard rename(temporary, final) == 0 else { throw .file("renaming \(temporary) to \(final): \(Self.lastError)") }
        try Self.syncFolder(folder)
        return Artifact(key: key, path: final, size: size, sha256: digest.hex)
    }

    /// Removes a file (a failed build's temporary file, an evicted artifact) and the SQLite
    /// journal an exporter may have left beside a temporary file.
    public func remove(_ file: String) {
        unlink(file)
        unlink(file + "-journal")
        unlink(file + "-wal")
        unlink(file + "-shm")
    }

    /// Every published file with its size and modification time (seconds), for eviction.
    public func published() -> [ArtifactEviction.Entry] {
        var entries: [ArtifactEviction.Entry] = []
        for (_, versionFolder) in versionFolders() {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: versionFolder)) ?? [] where !name.hasPrefix(".") {
                var info = stat()
                guard stat(versionFolder + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
                entries.append(ArtifactEviction.Entry(path: versionFolder + "/" + name, size: Int(info.st_size),
                                                      lastUsed: Int64(info.st_mtim.tv_sec)))
            }
        }
        return entries
    }

    /// Removes every temporary file whose building process is gone (killed mid-build); files of
    /// live processes (another packd sharing the directory) are kept. Returns how many.
    public func removeAbandonedBuilds() -> Int {
        var removed = 0
        for (_, versionFolder) in versionFolders() {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: versionFolder)) ?? [] {
                guard let pid = ArtifactFileName.builder(of: name.replacingOccurrences(of: "-journal", with: "")),
                      pid != getpid(), kill(pid, 0) == -1, errno == ESRCH else { continue }
                unlink(versionFolder + "/" + name)
                removed += 1
            }
        }
        return removed
    }

    /// Removes the pack's artifacts of every version not in `retained` (all of them for an
    /// empty set: the pack is gone). Returns the bytes freed.
    @discardableResult
    public func removeVersions(pack: Int64, except retained: Set<Int64>) -> Int {
        let packFolder = path + "/pack-\(pack)"
        var freed = 0
        for name in (try? FileManager.default.contentsOfDirectory(atPath: packFolder)) ?? [] {
            guard let version = ArtifactFileName.version(ofFolder: name), !retained.contains(version) else { continue }
            let folder = packFolder + "/" + name
            for file in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
                var info = stat()
                if stat(folder + "/" + file, &info) == 0 { freed += Int(info.st_size) }
                unlink(folder + "/" + file)
            }
            rmdir(folder)
        }
        if retained.isEmpty { rmdir(packFolder) }
        return freed
    }

    /// The packs that have a folder here.
    public func packs() -> [Int64] {
        ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).compactMap(ArtifactFileName.pack(ofFolder:))
    }

    private func versionFolders() -> [(Int64, String)] {
        var folders: [(Int64, String)] = []
        for pack in packs() {
            let packFolder = path + "/pack-\(pack)"
            for name in (try? FileManager.default.contentsOfDirectory(atPath: packFolder)) ?? [] {
                if let version = ArtifactFileName.version(ofFolder: name) { folders.append((version, packFolder + "/" + name)) }
            }
        }
        return folders
    }

    /// `fsync` of a folder, so a rename in it survives a power loss.
    static func syncFolder(_ folder: String) throws(ArtifactError) {
        let descriptor = open(folder, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .file("opening \(folder) to sync it: \(lastError)") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw .file("syncing \(folder): \(lastError)") }
    }

    static var lastError: String { String(cString: strerror(errno)) }
}
