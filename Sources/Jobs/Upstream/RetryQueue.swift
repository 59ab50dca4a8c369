import Loop

/// Work waiting for its next attempt, each entry due at its own time, released by one loop timer
/// armed for the earliest. Loop thread only.
final class RetryQueue<Entry> {
    private var entries: [(due: ContinuousClock.Instant, entry: Entry)] = []
    private let timer: LoopTimer
    private let release: (Entry) -> Void
    private var closed = false

    /// `release` receives each entry once it is due (never after `close()`).
    init(loop: EventLoop, release: @escaping (Entry) -> Void) {
        timer = LoopTimer(loop: loop)
        self.release = release
    }

    func add(_ entry: Entry, after delay: Duration) {
        guard !closed else { return }
        entries.append((.now + delay, entry))
        arm()
    }

    /// Drops what is waiting and stops the timer for good.
    /// Entries waiting.
    var count: Int { entries.count }

    func close() {
        closed = true
        entries.removeAll()
        timer.close()
    }

    private func arm() {
        guard !closed, let due = entries.map(\.due).min() else { return }
        timer.start(after: ContinuousClock.now.duration(to: due)) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            let due = entries.filter { $0.due <= now }
            entries.removeAll { $0.due <= now }
            for item in due where !closed { release(item.entry) }
            arm()
        }
    }
}
