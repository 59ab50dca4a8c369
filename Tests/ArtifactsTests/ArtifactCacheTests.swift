@testable import Artifacts
import Foundation
import Loop
import PackdTestSupport
import Testing

/// `ArtifactCache` on a real loop and directory: requests for one key share one build, a failed
/// build leaves no file and is tried again, builds beyond the slots wait in the queue and only
/// a full queue is refused.
@Suite struct ArtifactCacheTests {
    /// Builds the test controls: each started build waits until `finish` is called for its key.
    final class HeldBuilds: @unchecked Sendable {
        private let lock = NSLock()
        private var pending: [ArtifactKey: (String, (Result<Void, any Error>) -> Void)] = [:]

        func build(_ key: ArtifactKey, _ path: String, _ done: @escaping (Result<Void, any Error>) -> Void) {
            lock.withLock { pending[key] = (path, done) }
        }

        var started: Set<ArtifactKey> { lock.withLock { Set(pending.keys) } }

        /// Writes `bytes` (nil: fails the build) and reports on the loop.
        func finish(_ key: ArtifactKey, bytes: [UInt8]?, on thread: LoopThread) throws {
            guard let (path, done) = lock.withLock({ pending.removeValue(forKey: key) }) else { return }
            if let bytes { try Data(bytes).write(to: URL(fileURLWithPath: path)) }
            _ = try thread.sync { done(bytes == nil ? .failure(CocoaError(.fileWriteUnknown)) : .success(())) }
        }
    }

    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var results: [Result<Artifact, ArtifactError>] = []
        func add(_ result: Result<Artifact, ArtifactError>) { lock.withLock { results.append(result) } }
        var all: [Result<Artifact, ArtifactError>] { lock.withLock { results } }
    }

    static func withCache(_ configuration: ArtifactCache.Configuration,
                          _ body: (LoopThread, ArtifactCache, String) throws -> Void) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("artifact-cache-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let thread = try LoopThread()
        defer { thread.shutdown() }
        nonisolated(unsafe) let cache = try thread.sync { ArtifactCache(directory: ArtifactDirectory(path: folder), loop: thread.loop,
                                                                         configuration: configuration) }
        try body(thread, cache, folder)
    }

    static func ask(_ cache: ArtifactCache, _ key: ArtifactKey, _ builds: HeldBuilds, _ answers: Answers, on thread: LoopThread) throws {
        nonisolated(unsafe) let cache = cache
        _ = try thread.sync { cache.artifact(key, build: builds.build) { answers.add($0) } }
    }

    @Test func oneBuildForEveryoneAskingAndAFailedBuildLeavesNothing() throws {
        try Self.withCache(.init()) { thread, cache, folder in
            let key = ArtifactKey(pack: 3, version: 1, format: .maplibre)
            let builds = HeldBuilds(), answers = Answers()
            for _ in 0..<5 { try Self.ask(cache, key, builds, answers, on: thread) }
            #expect(eventually { builds.started == [key] })
            // The build fails: every waiter hears it, no file stays behind.
            try builds.finish(key, bytes: nil, on: thread)
            #expect(eventually { answers.all.count == 5 })
            #expect(answers.all.allSatisfy { if case .failure(.build) = $0 { true } else { false } })
            let versionFolder = folder + "/pack-3/v1"
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: versionFolder)) ?? []).isEmpty)

            // Asked again, it is built again; the published file is named by its digest.
            try Self.ask(cache, key, builds, answers, on: thread)
            #expect(eventually { builds.started == [key] })
            try builds.finish(key, bytes: Array("abc".utf8), on: thread)
            #expect(eventually { answers.all.count == 6 })
            let artifact = try #require(try answers.all.last?.get())
            #expect(artifact.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
            #expect(artifact.size == 3)
            #expect(try FileManager.default.contentsOfDirectory(atPath: versionFolder) == ["maplibre.\(artifact.sha256).db"])
            nonisolated(unsafe) let cache = cache
            #expect(try thread.sync { cache.buildsStarted } == 2)

            // Found on disk from now on: no build.
            try Self.ask(cache, key, builds, answers, on: thread)
            #expect(eventually { answers.all.count == 7 })
            #expect(try answers.all.last?.get() == artifact)
            #expect(try thread.sync { cache.buildsStarted } == 2)
        }
    }

    @Test func buildsBeyondTheSlotsWaitAndOnlyAFullQueueIsRefused() throws {
        try Self.withCache(.init(concurrentBuilds: 1, maximumQueuedBuilds: 1)) { thread, cache, _ in
            let keys = (1...3).map { ArtifactKey(pack: Int64($0), version: 1, format: .pmtiles) }
            let builds = HeldBuilds(), answers = Answers()
            for key in keys { try Self.ask(cache, key, builds, answers, on: thread) }
            // One builds, one waits, one finds the queue full. Which is which is the order the
            // three directory lookups finish on the thread pool, not the order of the requests.
            #expect(eventually { answers.all.count == 1 && builds.started.count == 1 })
            guard case .failure(.queueFull(1)) = answers.all.first else {
                Issue.record("expected a full queue, got \(answers.all)")
                return
            }
            let first = try #require(builds.started.first)
            try builds.finish(first, bytes: [1, 2, 3], on: thread)
            // The waiting one starts only once the first is done.
            #expect(eventually { builds.started.count == 1 && builds.started != [first] })
            let second = try #require(builds.started.first)
            try builds.finish(second, bytes: [4, 5], on: thread)
            #expect(eventually { answers.all.count == 3 })
            #expect(answers.all.dropFirst().allSatisfy { (try? $0.get()) != nil })
        }
    }

    @Test func theBudgetKeepsWhatIsBeingServed() throws {
        try Self.withCache(.init(maximumBytes: 10)) { thread, cache, folder in
            let builds = HeldBuilds(), answers = Answers()
            let first = ArtifactKey(pack: 1, version: 1, format: .maplibre), second = ArtifactKey(pack: 2, version: 1, format: .maplibre)
            try Self.ask(cache, first, builds, answers, on: thread)
            #expect(eventually { builds.started == [first] })
            try builds.finish(first, bytes: Array(repeating: 1, count: 8), on: thread)
            #expect(eventually { answers.all.count == 1 })
            let served = try #require(try answers.all.first?.get())
            nonisolated(unsafe) let cache = cache
            _ = try thread.sync { cache.beginServing(served) }
            // Over budget with both, but the first is being sent: it stays.
            try Self.ask(cache, second, builds, answers, on: thread)
            #expect(eventually { builds.started == [second] })
            try builds.finish(second, bytes: Array(repeating: 2, count: 8), on: thread)
            #expect(eventually { answers.all.count == 2 })
            #expect(FileManager.default.fileExists(atPath: served.path))
            _ = try thread.sync { cache.endServing(served) }
            // The next build trims again: now the least recently used one goes.
            let third = ArtifactKey(pack: 3, version: 1, format: .maplibre)
            try Self.ask(cache, third, builds, answers, on: thread)
            #expect(eventually { builds.started == [third] })
            try builds.finish(third, bytes: Array(repeating: 3, count: 4), on: thread)
            #expect(eventually { !FileManager.default.fileExists(atPath: served.path) })
            #expect(FileManager.default.fileExists(atPath: folder + "/pack-3/v1"))
        }
    }
}
