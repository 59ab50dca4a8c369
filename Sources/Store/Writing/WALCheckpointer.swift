import CSQLite
import Foundation

/// Copies the write-ahead log back into the database file on its own thread and connection, so
/// the writer only ever appends to the log.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 pages, on the writer:
/// reading those pages back from the log, writing them to the database file and syncing both.
/// Downloading 20 KiB tiles, that was over half of the writer thread's time (perf: pread, pwrite
/// and fdatasync under `sqlite3WalCheckpoint`), and the writer is what bounds a download's speed.
/// Here a PASSIVE checkpoint runs beside the writer (WAL mode lets a checkpoint and a writer
/// proceed together; each takes its own lock).
///
/// A checkpoint can only reset the log once it has caught up with the writer, which a writer
/// that never pauses would never let happen: past `maximumFrames` the writer waits (bounded)
/// for a round that starts after it stopped appending, so the log stays bounded and restarts.
/// Durability is unchanged: a commit is in the log whichever thread copies it later, and a crash
/// between the two is what WAL recovery is for.
final class WALCheckpointer: @unchecked Sendable {
    /// A round starts once the log holds this many frames (16 MiB; SQLite's own threshold is
    /// 1,000 pages, 4 MiB, but every round syncs both files: fewer, larger rounds measured
    /// 15-20 % faster downloads of 20 KiB tiles)…
    let startFrames: Int
    /// …and the writer waits for one to finish past this many (64 MiB).
    let maximumFrames: Int
    /// How long the writer waits at most; a reader holding an old snapshot can keep a round from
    /// catching up, and the log then grows past `maximumFrames` instead of the writer stalling.
    let maximumWait: TimeInterval

    private let database: Database
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var requested = false
    private var stopping = false
    private var hasStopped = false
    private var roundsStarted = 0
    private var roundsFinished = 0

    init(path: String, startBytes: Int = 16 << 20, maximumBytes: Int = 64 << 20, maximumWait: TimeInterval = 5) throws {
        database = try Database(path: path, mode: .readWrite)
        try database.applyStandardPragmas()
        let pageSize = max(512, Int(try database.scalarInt("PRAGMA page_size") ?? 4096))
        startFrames = max(1, startBytes / pageSize)
        maximumFrames = max(startFrames, maximumBytes / pageSize)
        self.maximumWait = maximumWait
        // Not kept: a stored Thread keeps its closure, and with it this object, for good.
        let thread = Thread { [self] in run() }
        thread.name = "packd-checkpoint"
        thread.stackSize = 1 << 20
        thread.start()
    }

    /// Takes the checkpoints of `writer` (a connection to the same file) off it: installs a WAL
    /// hook, which also turns its automatic checkpoint off (SQLite keeps one hook per connection).
    func attach(to writer: Database) {
        sqlite3_wal_hook(writer.handle, { context, _, _, frames in
            guard let context else { return SQLITE_OK }
            Unmanaged<WALCheckpointer>.fromOpaque(context).takeUnretainedValue().logGrew(to: Int(frames))
            return SQLITE_OK
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Gives the writer its automatic checkpoint back (before `stop`, while it is still open).
    func detach(from writer: Database) {
        sqlite3_wal_autocheckpoint(writer.handle, 1000)
    }

    /// Checkpoint rounds finished so far (tests).
    var rounds: Int {
        condition.withLock { roundsFinished }
    }

    /// Called by SQLite on the writer's thread after each commit, once its locks are released
    /// (so waiting here holds nobody up but the writer, which is the point).
    private func logGrew(to frames: Int) {
        guard frames >= startFrames else { return }
        condition.lock()
        defer { condition.unlock() }
        guard !stopping else { return }
        requested = true
        condition.broadcast()
        guard frames >= maximumFrames else { return }
        // A round that starts from now on sees every frame written so far.
        let target = roundsStarted + 1
        let deadline = Date().addingTimeInterval(maximumWait)
        while roundsFinished < target, !stopping {
            if !condition.wait(until: deadline) { break }
        }
    }

    private func run() {
        while true {
            condition.lock()
            while !requested && !stopping { condition.wait() }
            if stopping {
                hasStopped = true
                condition.broadcast()
                condition.unlock()
                return
            }
            requested = false
            roundsStarted += 1
            condition.unlock()

            var logFrames: Int32 = 0
            var copiedFrames: Int32 = 0
            // SQLITE_BUSY (another checkpoint under way, say) is not an error worth more than
            // the next round; nothing here can lose data.
            _ = sqlite3_wal_checkpoint_v2(database.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &logFrames, &copiedFrames)

            condition.lock()
            roundsFinished += 1
            condition.broadcast()
            condition.unlock()
        }
    }

    /// Finishes the round under way, stops the thread and waits for it, then closes its
    /// connection. Idempotent.
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !hasStopped { condition.wait() }
        condition.unlock()
        database.close()
    }
}
