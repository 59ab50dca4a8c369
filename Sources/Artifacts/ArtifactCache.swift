import Foundation
import Loop

/// The artifacts on disk, each built once: every request for a key joins the one lookup or
/// build under way for it, so a fleet asking at once costs one export and gets one file. Builds
/// of different keys run `concurrentBuilds` at a time and the rest wait in a bounded queue (a
/// full queue is the only refusal; waiting for a build never is). After each build the
/// directory is trimmed to `maximumBytes`, least recently used first.
///
/// Loop thread only (checked in debug builds); all disk work runs on the thread pool.
public final class ArtifactCache {
    public struct Configuration: Sendable {
        /// The directory's byte budget; nil: unbounded.
        public var maximumBytes: Int?
        public var concurrentBuilds: Int
        /// Distinct keys that may wait for a build slot.
        public var maximumQueuedBuilds: Int

        public init(maximumBytes: Int? = nil, concurrentBuilds: Int = 2, maximumQueuedBuilds: Int = 256) {
            self.maximumBytes = maximumBytes
            self.concurrentBuilds = max(1, concurrentBuilds)
            self.maximumQueuedBuilds = max(0, maximumQueuedBuilds)
        }
    }

    /// Writes `key` into the file at `temporaryPath` off the loop, then calls `done` on the loop.
    public typealias Build = (_ key: ArtifactKey, _ temporaryPath: String, _ done: @escaping (Result<Void, any Error>) -> Void) -> Void
    public typealias Completion = (Result<Artifact, ArtifactError>) -> Void

    public let directory: ArtifactDirectory
    public let configuration: Configuration
    private let loop: EventLoop
    private var waiters: [ArtifactKey: [Completion]] = [:]
    private var queue: [(key: ArtifactKey, build: Build)] = []
    private var running = 0
    /// Milliseconds since 1970 each published path was last handed out (this process's view;
    /// the files' modification times stand in for the rest).
    private var lastUsed: [String: Int64] = [:]
    /// Paths being served now: eviction skips them.
    private var serving: [String: Int] = [:]
    private var trimming = false
    private var trimAgain = false

    /// Builds started since this cache was made (the tests count them; `/metrics` shows them).
    public private(set) var buildsStarted = 0
    /// Told each finished build with how long it took (logging, metrics).
    public var onBuilt: ((Artifact, Duration) -> Void)?
    /// Told each file eviction removed.
    public var onEvicted: ((ArtifactEviction.Entry) -> Void)?

    public init(directory: ArtifactDirectory, loop: EventLoop, configuration: Configuration = Configuration()) {
        self.directory = directory
        self.loop = loop
        self.configuration = configuration
    }

    /// The published artifact of `key`, built with `build` when there is none. `then` runs on
    /// the loop, once.
    public func artifact(_ key: ArtifactKey, build: @escaping Build, then: @escaping Completion) {
        loop.assertInLoopThread()
        if waiters[key] != nil {
            waiters[key]!.append(then)
            return
        }
        waiters[key] = [then]
        let directory = directory
        loop.runOnThreadPool({ directory.find(key) }) { [self] found in
            if let found { return finish(key, .success(found)) }
            if running < configuration.concurrentBuilds {
                start(key, build)
            } else if queue.count < configuration.maximumQueuedBuilds {
                queue.append((key, build))
            } else {
                finish(key, .failure(.queueFull(configuration.maximumQueuedBuilds)))
            }
        }
    }

    /// Marks `artifact` as being sent (not evicted until `endServing`).
    public func beginServing(_ artifact: Artifact) {
        loop.assertInLoopThread()
        serving[artifact.path, default: 0] += 1
        lastUsed[artifact.path] = Self.now
    }

    public func endServing(_ artifact: Artifact) {
        loop.assertInLoopThread()
        guard let count = serving[artifact.path] else { return }
        serving[artifact.path] = count > 1 ? count - 1 : nil
    }

    /// Removes the pack's artifacts of versions outside `retained` (every one for an empty set).
    public func removeVersions(pack: Int64, except retained: Set<Int64>) {
        loop.assertInLoopThread()
        let directory = directory
        loop.runOnThreadPool({ directory.removeVersions(pack: pack, except: retained) }, then: { _ in })
    }

    private func start(_ key: ArtifactKey, _ build: @escaping Build) {
        running += 1
        buildsStarted += 1
        let started = ContinuousClock.now
        let directory = directory
        loop.runOnThreadPool({ Result { () throws(ArtifactError) in try directory.temporaryPath(for: key) } }) { [self] prepared in
            switch prepared {
            case .failure(let error):
                built(key, .failure(error), started: started)
            case .success(let temporary):
                build(key, temporary) { [self] result in
                    switch result {
                    case .failure(let error):
                        loop.runOnThreadPool({ directory.remove(temporary) }) { [self] in
                            built(key, .failure((error as? ArtifactError) ?? .build(error)), started: started)
                        }
                    case .success:
                        loop.runOnThreadPool({
                            let published = Result { () throws(ArtifactError) in try directory.publish(temporary, as: key) }
                            if case .failure = published { directory.remove(temporary) }
                            return published
                        }) { [self] published in built(key, published, started: started) }
                    }
                }
            }
        }
    }

    private func built(_ key: ArtifactKey, _ result: Result<Artifact, ArtifactError>, started: ContinuousClock.Instant) {
        running -= 1
        if case .success(let artifact) = result {
            lastUsed[artifact.path] = Self.now
            onBuilt?(artifact, ContinuousClock.now - started)
        }
        finish(key, result)
        if !queue.isEmpty, running < configuration.concurrentBuilds {
            let next = queue.removeFirst()
            start(next.key, next.build)
        }
        if case .success(let artifact) = result { trim(keeping: artifact.path) }
    }

    private func finish(_ key: ArtifactKey, _ result: Result<Artifact, ArtifactError>) {
        let waiting = waiters.removeValue(forKey: key) ?? []
        for waiter in waiting { waiter(result) }
    }

    /// Evicts least recently used files beyond the budget; one pass at a time.
    private func trim(keeping path: String) {
        guard let maximum = configuration.maximumBytes else { return }
        if trimming {
            trimAgain = true
            return
        }
        trimming = true
        let directory = directory
        let used = lastUsed
        let keep = Set(serving.keys).union([path])
        loop.runOnThreadPool({ () -> [ArtifactEviction.Entry] in
            let entries = directory.published().map { entry in
                ArtifactEviction.Entry(path: entry.path, size: entry.size, lastUsed: used[entry.path] ?? entry.lastUsed * 1000)
            }
            let victims = ArtifactEviction.victims(entries, maximumBytes: maximum, keep: keep)
            for victim in victims { directory.remove(victim.path) }
            return victims
        }) { [self] victims in
            for victim in victims {
                lastUsed[victim.path] = nil
                onEvicted?(victim)
            }
            trimming = false
            if trimAgain {
                trimAgain = false
                trim(keeping: path)
            }
        }
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }
}
