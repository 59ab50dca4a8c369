import API
import Foundation
import Testing

/// Scratch files of a packd killed mid-export are removed by the next one; nobody else's are.
@Suite struct ScratchFileTests {
    @Test func filesOfProcessesThatAreGoneAreRemovedAndNothingElse() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("packd-scratch-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: scratch) }
        // A process that has certainly exited (and been reaped) by the time the sweep runs.
        let finished = Process()
        finished.executableURL = URL(fileURLWithPath: "/bin/true")
        try finished.run()
        finished.waitUntilExit()
        let gone = finished.processIdentifier
        let names = [
            "packd-\(gone)-export-\(UUID().uuidString).pmtiles", "packd-\(gone)-import-\(UUID().uuidString).sqlite",
            "packd-\(getpid())-export-\(UUID().uuidString).mbtiles", // this process: in use
            "packd-1-export-\(UUID().uuidString).sqlite", // init: alive
            "packd-export-\(UUID().uuidString).pmtiles", "packd-notapid-export.sqlite", "notes.txt",
        ]
        for name in names { try Data([1, 2, 3]).write(to: URL(fileURLWithPath: scratch + "/" + name)) }

        let removed = SharingSettings(scratchDirectory: scratch).removeAbandonedScratchFiles()
        #expect(Set(removed) == Set(names.prefix(2)))
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: scratch)) == Set(names.dropFirst(2)))
    }
}
