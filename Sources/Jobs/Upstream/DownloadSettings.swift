import Fetch

/// Bounds of one pack's download: how much runs at once and how hard a resource is retried.
public struct DownloadSettings: Sendable {
    /// Transfers one pack keeps in flight; the fetcher's own per-host cap still applies.
    public var maxInFlight: Int
    /// Attempts per resource (first try included) before it is recorded as failed.
    public var maxAttempts: Int
    /// First retry delay; doubled per attempt, with up to 50 % jitter, capped at `maxBackoff`.
    public var initialBackoff: Duration
    public var maxBackoff: Duration
    /// Share of the expected resources that may fail before the download stops early with
    /// `too_many_failures` (a broken upstream) instead of trying everything else first.
    public var tolerableFailureShare: Double
    /// Largest body accepted per resource.
    public var maxBodyBytes: Int
    /// Tiles looked up in the store per query when skipping what is already stored.
    public var lookupBatchTiles: Int
    /// Connect, low-speed and total limits of each request: an upstream that accepts and never
    /// answers costs a timeout and a retry, never a pack stuck `active`.
    public var timeouts: FetchRequest.Timeouts
    /// How often a download checks that it is still doing something (see `PackDownload`'s watchdog).
    public var watchdogInterval: Duration
    /// Bytes handed to the writer and not yet committed before fetching pauses: what bounds
    /// memory when the disk is slower than the network.
    public var maxUncommittedBytes: Int
    /// How PMTiles archives are read: bounds on what an archive may make packd hold, and the
    /// coalescing of tiles into range requests.
    public var archive = ArchiveLimits()
    /// What a write costs beside its body (key, headers, queue entry), so a flood of tiny or
    /// empty tiles is bounded too.
    static let writeOverheadBytes = 1024

    public init(maxInFlight: Int = 32, maxAttempts: Int = 5, initialBackoff: Duration = .milliseconds(200),
                maxBackoff: Duration = .seconds(30), tolerableFailureShare: Double = 0.05,
                maxBodyBytes: Int = 32 << 20, lookupBatchTiles: Int = 16_384, maxUncommittedBytes: Int = 16 << 20,
                timeouts: FetchRequest.Timeouts = FetchRequest.Timeouts(), watchdogInterval: Duration = .seconds(10)) {
        self.maxInFlight = max(1, maxInFlight)
        self.maxAttempts = max(1, maxAttempts)
        self.initialBackoff = initialBackoff
        self.maxBackoff = maxBackoff
        self.tolerableFailureShare = tolerableFailureShare
        self.maxBodyBytes = maxBodyBytes
        self.lookupBatchTiles = max(1, lookupBatchTiles)
        self.timeouts = timeouts
        self.watchdogInterval = max(watchdogInterval, .milliseconds(10))
        self.maxUncommittedBytes = max(4 * Self.writeOverheadBytes, maxUncommittedBytes)
    }

    /// Failures tolerated before stopping early: the share, but never fewer than 16 (a small pack
    /// with a couple of missing sprites is worth finishing).
    func failureBudget(expectedResources: Int) -> Int {
        max(16, Int(tolerableFailureShare * Double(max(expectedResources, 0))))
    }

    /// The delay before attempt `attempt + 1` (attempt counts from 1).
    func backoff(afterAttempt attempt: Int) -> Duration {
        let exponent = min(max(attempt - 1, 0), 20)
        let base = min(initialBackoff * (1 << exponent), maxBackoff)
        return base * Double.random(in: 0.5...1.0)
    }
}
