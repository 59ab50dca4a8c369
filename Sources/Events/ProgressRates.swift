import Packs

/// Rolling download rates of the active packs, from their committed progress: how many bytes and
/// resources the store took over the last `window` seconds. Rates describe durable progress only
/// (what a poll shows), so a client dividing the remaining work by them gets an honest ETA.
///
/// Pure bookkeeping with the time passed in (seconds on any monotonic clock), so it is tested
/// without a clock; `PackEventPublisher` owns one on the loop thread.
struct ProgressRates {
    private struct Sample {
        var time: Double
        var bytes: Int64
        var resources: Int64
    }

    /// Seconds of history a rate averages over.
    let window: Double
    /// A rate over less time than this is noise (two commits 5 ms apart): unknown instead.
    let minimumSpan: Double
    private var packs: [Int64: [Sample]] = [:]

    init(window: Double = 10, minimumSpan: Double = 0.25) {
        self.window = window
        self.minimumSpan = minimumSpan
    }

    /// Records the pack's committed progress at `now`. Counts that go down (a recount after a
    /// resume) restart the history rather than produce a negative rate.
    mutating func record(packID: Int64, progress: StoredProgress, now: Double) {
        let sample = Sample(time: now, bytes: progress.completedBytes, resources: progress.completedResources)
        var samples = packs[packID] ?? []
        if let last = samples.last, sample.bytes < last.bytes || sample.resources < last.resources || now < last.time {
            samples.removeAll()
        }
        samples.append(sample)
        // Keep one sample at or before the window's start as the baseline; drop older ones.
        while samples.count > 2, samples[1].time <= now - window { samples.removeFirst() }
        packs[packID] = samples
    }

    /// The pack stopped being active (or is gone): its history no longer describes a download.
    mutating func forget(packID: Int64) {
        packs[packID] = nil
    }

    /// The pack's rates at `now`, over its history within the window (older history counts from
    /// the window's start), nil while unknown. A pack that stopped committing has its rate fall
    /// towards zero.
    func rate(packID: Int64, now: Double) -> RollingRate? {
        guard let samples = packs[packID], samples.count >= 2, let first = samples.first, let last = samples.last else { return nil }
        let baseline = samples.last { $0.time <= now - window } ?? first
        let span = now - baseline.time
        guard span >= minimumSpan else { return nil }
        return RollingRate(bytesPerSecond: Double(last.bytes - baseline.bytes) / span,
                           resourcesPerSecond: Double(last.resources - baseline.resources) / span)
    }

    /// Every known rate at `now`, for a list of packs read off the loop.
    func rates(now: Double) -> [Int64: RollingRate] {
        var rates: [Int64: RollingRate] = [:]
        for packID in packs.keys {
            if let rate = rate(packID: packID, now: now) { rates[packID] = rate }
        }
        return rates
    }

    var trackedPacks: Int { packs.count }
}

/// Committed bytes and resources per second of one active pack.
public struct RollingRate: Sendable, Equatable {
    public var bytesPerSecond: Double
    public var resourcesPerSecond: Double

    public init(bytesPerSecond: Double, resourcesPerSecond: Double) {
        self.bytesPerSecond = bytesPerSecond
        self.resourcesPerSecond = resourcesPerSecond
    }

    /// `progress.bytes_per_second`.
    public var wholeBytesPerSecond: Int64 { Int64(max(bytesPerSecond, 0).rounded()) }

    /// `progress.eta_seconds`: the remaining resources at the resource rate; nil while the expected
    /// count is not final (it would only grow) or nothing is being stored.
    public func etaSeconds(completedResources: Int64, expected: ExpectedCounts) -> Int64? {
        guard expected.precise else { return nil }
        let remaining = max(expected.resources - completedResources, 0)
        if remaining == 0 { return 0 }
        guard resourcesPerSecond > 0 else { return nil }
        let seconds = (Double(remaining) / resourcesPerSecond).rounded(.up)
        return seconds < 1e12 ? Int64(seconds) : nil
    }
}

extension PackProgress {
    /// The wire progress of committed counts, as `GET /v1/packs/{id}` and `progress` events show
    /// it. `rate`: `bytes_per_second` and `eta_seconds`, null when the pack is not downloading or
    /// the rate is not known yet. `transfers`: `transfers_in_flight` and `throttled`, 0 and null
    /// when the pack is not downloading.
    public init(_ progress: StoredProgress, expected: ExpectedCounts, rate: RollingRate?, transfers: PackTransferStatus?) {
        self.init(progress, expected: expected, bytesPerSecond: rate?.wholeBytesPerSecond,
                  etaSeconds: rate?.etaSeconds(completedResources: progress.completedResources, expected: expected))
        transfersInFlight = transfers?.transfersInFlight ?? 0
        throttled = transfers?.throttled
    }
}
