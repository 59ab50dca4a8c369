import Foundation
import Testing
@testable import Store

@Suite struct CrashSafetyTests {
    /// The helper executable sits beside the test bundle in the build directory.
    func crashWriterURL() throws -> URL {
        let candidates = [
            URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            Bundle.main.bundleURL,
        ].map { $0.appendingPathComponent("packd-store-crash-writer") }
        return try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) },
                            "packd-store-crash-writer not found next to the test binary")
    }

    /// Starts the writer on `path`, waits until it reported `commits` durable batches, SIGKILLs it.
    func killMidStream(path: String, afterCommits commits: Int) throws {
        let process = Process()
        process.executableURL = try crashWriterURL()
        process.arguments = [path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()

        // Wait (by condition, generous deadline) until batches are durably flowing.
        var seen = ""
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline && seen.components(separatedBy: "committed").count <= commits {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break } // EOF: the child died on its own
            seen += String(decoding: chunk, as: UTF8.self)
        }
        #expect(!seen.contains("error"), "child reported: \(seen.suffix(300))")
        #expect(process.isRunning, "child exited early: \(seen.suffix(300))")
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
    }

    /// The database opens, is intact, and every maintained count equals a recount.
    func checkConsistent(path: String, packs expectedPacks: Int) throws {
        let store = try OfflineDatabase(path: path)
        #expect(try store.database.scalarString("PRAGMA integrity_check") == "ok")
        #expect(try store.database.scalarInt("PRAGMA foreign_key_check") == nil)
        let packs = try StoreReader(path: path).packs(limit: 500)
        #expect(packs.count == expectedPacks)
        for pack in packs {
            let stored = try store.progress(pack.id)
            #expect(stored.completed == (try ProgressQueries.recount(pack.id, in: store.database)), "pack \(pack.id)")
        }
        // Whatever the child reported durable before the kill is there.
        #expect(try store.progress(packs[0].id).completedTiles >= 20)
        #expect(try store.database.scalarInt("SELECT linked_tiles FROM packd_totals") == (try ProgressQueries.recountLinkedTiles(in: store.database)))
    }

    @Test(.timeLimit(.minutes(2)))
    func sigkillMidStreamLeavesAConsistentDatabase() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("crash.db")
        try killMidStream(path: path, afterCommits: 20)
        try checkConsistent(path: path, packs: 2)
    }

    /// Soak (PACKD_SOAK=1): kill, reopen and keep writing into the same file, many times over.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["PACKD_SOAK"] == "1"), .timeLimit(.minutes(10)))
    func repeatedKillsOnTheSameDatabase() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("soak.db")
        for round in 1...25 {
            try killMidStream(path: path, afterCommits: 10 + round * 3)
            try checkConsistent(path: path, packs: 2 * round)
        }
    }
}
