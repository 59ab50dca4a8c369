import Foundation
import Packs
import Store

// Streams batches into a packd database until it is killed: the victim of StoreTests'
// crash-safety test (SIGKILL mid-stream must leave a consistent database).
// Usage: packd-store-crash-writer <database path>
// Prints "committed <batches>" after each durable batch so the test knows writes are flowing.

guard CommandLine.arguments.count == 2 else {
    FileHandle.standardError.write(Data("usage: packd-store-crash-writer <database path>\n".utf8))
    exit(2)
}
let path = CommandLine.arguments[1]

final class CommitCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var batches = 0
    func record(_ outcome: BatchOutcome) {
        lock.lock()
        batches += 1
        let count = batches
        lock.unlock()
        // Unbuffered, so the parent sees each line before it kills us.
        let line = outcome.error.map { "error \($0)\n" } ?? "committed \(count)\n"
        FileHandle.standardOutput.write(Data(line.utf8))
    }
}

let counter = CommitCounter()
do {
    let writer = try WriterThread(path: path, configuration: .init(maximumBatchCount: 64, maximumBatchDelay: .milliseconds(5)),
                                  onCommit: { counter.record($0) })
    let packs: [Int64] = try [0, 1].map { index in
        let created = DispatchSemaphore(value: 0)
        let id = LockedBox<Int64>(0)
        writer.perform({ store in
            try store.createPack(PackRecord(name: "crash-\(index)", state: .active, definition: "{}"), now: 1)
        }, completion: { result in
            id.value = (try? result.get()) ?? -1
            created.signal()
        })
        created.wait()
        guard id.value > 0 else { throw CocoaError(.fileWriteUnknown) }
        return id.value
    }
    var generator = SystemRandomNumberGenerator()
    let deadline = Date().addingTimeInterval(120) // never outlive a test run that lost track of us
    var n: Int64 = 0
    while Date() < deadline {
        if writer.pendingWrites > 2_000 {
            usleep(500)
            continue
        }
        n += 1
        // Every 5th write re-downloads an earlier tile with another size; every 3rd is shared.
        let index = n % 5 == 0 ? n / 2 : n
        let size = 512 + Int(generator.next() % 3000)
        var body = [UInt8](repeating: 0, count: size)
        body.withUnsafeMutableBytes { raw in
            for offset in stride(from: 0, to: raw.count - 7, by: 8) { raw.storeBytes(of: generator.next(), toByteOffset: offset, as: UInt64.self) }
        }
        let key = ResourceKey.tile(TileKey(urlTemplate: "https://crash.test/{z}/{x}/{y}", z: 14, x: index % 1000, y: index / 1000))
        writer.submit(ResourceWrite(key: key, content: .body(StoredBody(data: body, compressed: false)), packID: packs[0]))
        if n % 3 == 0 {
            writer.submit(ResourceWrite(key: key, content: .linkExisting, packID: packs[1]))
        }
        if n % 7 == 0 {
            let url = "https://crash.test/ambient/\(n)"
            writer.submit(ResourceWrite(key: .resource(url: url, kind: .image), content: .body(StoredBody(data: body, compressed: false))))
        }
    }
    writer.stop()
} catch {
    FileHandle.standardError.write(Data("crash writer failed: \(error)\n".utf8))
    exit(1)
}

final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.lock(); defer { lock.unlock() }; return stored }
        set { lock.lock(); stored = newValue; lock.unlock() }
    }
}
