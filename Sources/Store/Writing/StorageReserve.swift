import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Room held back on the database's file system for the writes that must land when it is full.
///
/// A full disk refuses the batch that filled it, and then every later write as well — including
/// the one that fails the downloading pack with `storage_full` and the events that say so, which
/// left the pack reading `active` with nothing downloading it until space was freed. So the
/// writer keeps a file of `bytes` beside the database (`<database>-reserve`, allocated with
/// `posix_fallocate`, kept across restarts). When a batch meets a full disk the writer deletes it
/// (`release`): the room it held takes the batch's state changes and events, while resource
/// writes are refused without touching the disk until the file system has room for the reserve
/// and as much again (`regain`), so what the reserve freed is never spent on tiles.
final class StorageReserve {
    let path: String
    let bytes: Int64
    /// The file is allocated: the disk is not known to be full.
    private(set) var isHeld = false {
        didSet { heldFileBytes.store(isHeld ? bytes : 0, ordering: .relaxed) }
    }
    /// What the reserve file holds on disk now (`bytes` while held, else 0), for
    /// `GET /v1/storage`. Any thread; the writer thread changes it.
    var heldBytes: Int64 { heldFileBytes.load(ordering: .relaxed) }
    private let heldFileBytes = Atomic<Int64>(0)

    /// `bytes == 0` disables the reserve (nothing is allocated; `regain` always succeeds).
    init(databasePath: String, bytes: Int64) {
        path = databasePath + "-reserve"
        self.bytes = max(0, bytes)
    }

    /// Allocates the reserve; false when the file system has no room for it.
    @discardableResult
    func hold() -> Bool {
        guard bytes > 0 else {
            isHeld = true
            return true
        }
        let descriptor = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        // Allocated, not sparse: a sparse file would free nothing when deleted.
        guard posix_fallocate(descriptor, 0, off_t(bytes)) == 0 else {
            unlink(path)
            return false
        }
        isHeld = true
        return true
    }

    /// Frees the reserve's room for the writes that must land on a full disk.
    func release() {
        guard isHeld else { return }
        isHeld = false
        if bytes > 0 { unlink(path) }
    }

    /// Takes the reserve back once the file system has room for it and as much again (checked
    /// with `statvfs`, then by allocating it); false while it does not.
    func regain() -> Bool {
        if isHeld { return true }
        guard bytes == 0 || (availableBytes ?? 0) >= 2 * bytes else { return false }
        return hold()
    }

    /// Bytes an unprivileged writer may still allocate on the database's file system.
    var availableBytes: Int64? {
        var stats = statvfs()
        let directory = (path as NSString).deletingLastPathComponent
        guard statvfs(directory.isEmpty ? "." : directory, &stats) == 0 else { return nil }
        return Int64(stats.f_bavail) * Int64(stats.f_frsize)
    }
}
