import Fetch
import Jobs

/// The download engine's settings of `packd serve`: how many packs run at once, upstream
/// concurrency and politeness, retries, failure tolerance, body and time limits, the upstream
/// rules (credentials, per-host policy) and added CAs — resolved like every other setting (flag,
/// then `PACKD_*`, then default).
struct DownloadConfiguration {
    /// Packs downloading at once (the scheduler's slots); the rest wait `queued`.
    var maxActivePacks = 2
    var fetch = FetchConfiguration()
    /// Cluster mode: the whole cluster's per-host transfer cap, which the live nodes share out
    /// (`ClusterShare`) — `--max-transfers-per-host` as set (it may exceed one node's
    /// `--max-transfers`), else `FetchConfiguration.fixedTransfersPerHost`: each node's adaptive
    /// limit learns from its own transfers only, so the cluster keeps a fixed cap unless told.
    var clusterTransfersPerHost = FetchConfiguration.fixedTransfersPerHost
    var settings = DownloadSettings(maxInFlight: Self.defaultTransfersPerPack)

    /// Resources one pack keeps under way by default: as many as the adaptive limit may give one
    /// host and a quarter more, so a single pack can use all a fast host allows — answers being
    /// handed to the pack and bodies being encoded still count as under way, and without the
    /// extra a host at its ceiling would idle while they are, and its limiter would never see a
    /// transfer wait. The extra wait in the fetcher's per-host queue (a few bytes each) until
    /// the host's limit admits them.
    static let defaultTransfersPerPack: Int = {
        let ceiling = max(HostConcurrencyLimiter.Settings().http1Maximum, HostConcurrencyLimiter.Settings().http2Maximum)
        return ceiling + ceiling / 4
    }()

    init() {}

    /// `clustered`: `--max-transfers-per-host` is then the whole cluster's cap, shared out between
    /// the live nodes (`ClusterShare`), so it may exceed one node's `--max-transfers`.
    init(options: ServeCommand.Options, source: ServerConfiguration.Source,
         upstreamPolicy: AddressPolicy, clustered: Bool = false) throws(ServerConfiguration.Invalid) {
        typealias Invalid = ServerConfiguration.Invalid
        maxActivePacks = try source.count(options.maxActivePacks, "MAX_ACTIVE_PACKS", 1...256) ?? maxActivePacks

        let defaults = FetchConfiguration()
        let maxTransfers = try source.count(options.maxTransfers, "MAX_TRANSFERS", 1...10_000) ?? defaults.maxTransfers
        // Unset: each host's limit adapts up to its protocol's ceiling. Set: the cap it stays under.
        let perHostSetting = source.value(options.maxTransfersPerHost, "MAX_TRANSFERS_PER_HOST")
        let perHost = try source.count(options.maxTransfersPerHost, "MAX_TRANSFERS_PER_HOST", 1...10_000)
        if let perHostSetting, let perHost, perHost > maxTransfers, !clustered {
            throw Invalid(setting: perHostSetting.setting, problem: "\(perHost) is more than the \(maxTransfers) transfers allowed overall")
        }
        let rate = try source.number(options.requestsPerSecondPerHost, "REQUESTS_PER_SECOND_PER_HOST", 0.001...100_000)
        var rules: [UpstreamRule] = []
        if let (path, setting) = source.value(options.upstreamRulesFile, "UPSTREAM_RULES_FILE") {
            do {
                rules = try UpstreamRulesFile.load(path: path)
            } catch {
                throw Invalid(setting: setting, problem: error.description)
            }
            if let index = rules.firstIndex(where: { ($0.policy.maxTransfers ?? 0) > maxTransfers }) {
                throw Invalid(setting: setting, problem: "rules[\(index)].max_transfers: more than the \(maxTransfers) "
                              + "transfers allowed overall (--max-transfers)")
            }
        }
        var caFile: String?
        if let (path, setting) = source.value(options.upstreamCaFile, "UPSTREAM_CA_FILE") {
            do {
                caFile = try UpstreamCAFile.check(path: path)
            } catch {
                throw Invalid(setting: setting, problem: error.description)
            }
        }
        fetch = FetchConfiguration(maxTransfers: maxTransfers, maxTransfersPerHost: perHost, requestsPerSecondPerHost: rate,
                                   addressPolicy: upstreamPolicy, rules: rules, caFile: caFile)
        clusterTransfersPerHost = perHost ?? clusterTransfersPerHost

        var settings = DownloadSettings(maxInFlight: Self.defaultTransfersPerPack)
        settings.maxInFlight = try source.count(options.maxTransfersPerPack, "MAX_TRANSFERS_PER_PACK", 1...10_000)
            ?? settings.maxInFlight
        settings.maxAttempts = try source.count(options.retryAttempts, "RETRY_ATTEMPTS", 1...100) ?? settings.maxAttempts
        settings.initialBackoff = try source.duration(options.retryInitialBackoff, "RETRY_INITIAL_BACKOFF") ?? settings.initialBackoff
        settings.maxBackoff = try source.duration(options.retryMaxBackoff, "RETRY_MAX_BACKOFF") ?? settings.maxBackoff
        if settings.maxBackoff < settings.initialBackoff {
            let setting = source.value(options.retryMaxBackoff, "RETRY_MAX_BACKOFF")?.setting
                ?? source.value(options.retryInitialBackoff, "RETRY_INITIAL_BACKOFF")?.setting ?? "--retry-max-backoff"
            throw Invalid(setting: setting, problem: "the maximum backoff is shorter than the initial backoff")
        }
        settings.tolerableFailureShare = try source.number(options.maxFailureShare, "MAX_FAILURE_SHARE", 0...1)
            ?? settings.tolerableFailureShare
        settings.maxBodyBytes = try source.count(options.maxResourceBytes, "MAX_RESOURCE_BYTES", 1024...(1 << 30))
            ?? settings.maxBodyBytes
        var timeouts = settings.timeouts
        if let connect = try source.duration(options.upstreamConnectTimeout, "UPSTREAM_CONNECT_TIMEOUT") {
            timeouts.connectMilliseconds = Self.milliseconds(connect)
        }
        if let stall = try source.duration(options.upstreamStallTimeout, "UPSTREAM_STALL_TIMEOUT") {
            timeouts.lowSpeedSeconds = max(1, Self.milliseconds(stall) / 1000)
        }
        if let total = try source.duration(options.upstreamTimeout, "UPSTREAM_TIMEOUT") {
            timeouts.totalMilliseconds = Self.milliseconds(total)
        }
        settings.timeouts = timeouts
        if let gap = try source.count(options.archiveMaxGap, "ARCHIVE_MAX_GAP", 0...(64 << 20)) {
            settings.archive.maxGap = UInt64(gap)
        }
        if let range = try source.count(options.archiveMaxRange, "ARCHIVE_MAX_RANGE", 1024...(64 << 20)) {
            settings.archive.maxSpan = UInt64(range)
        }
        if let bytes = try source.count(options.archiveBytesInFlight, "ARCHIVE_BYTES_IN_FLIGHT", 65536...(1 << 30)) {
            settings.archive.maxBytesInFlight = UInt64(bytes)
        }
        // At least two ranges under way at once, whatever their size.
        settings.archive.maxBytesInFlight = max(settings.archive.maxBytesInFlight, settings.archive.maxSpan * 2)
        self.settings = settings
    }

    private static func milliseconds(_ duration: Duration) -> Int {
        Int(duration.components.seconds) * 1000 + Int(duration.components.attoseconds / 1_000_000_000_000_000)
    }
}

extension ServerConfiguration.Source {
    typealias Invalid = ServerConfiguration.Invalid

    /// A whole number in `range`, nil when unset.
    func count(_ flag: String?, _ name: String, _ range: ClosedRange<Int>) throws(Invalid) -> Int? {
        guard let (text, setting) = value(flag, name) else { return nil }
        guard let value = Int(text), range.contains(value) else {
            throw Invalid(setting: setting, problem: "'\(text)' is not a whole number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A decimal number in `range`, nil when unset.
    func number(_ flag: String?, _ name: String, _ range: ClosedRange<Double>) throws(Invalid) -> Double? {
        guard let (text, setting) = value(flag, name) else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw Invalid(setting: setting, problem: "'\(text)' is not a number in \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// A duration (`500ms`, `10s`, `2m`), nil when unset.
    func duration(_ flag: String?, _ name: String) throws(Invalid) -> Duration? {
        guard let (text, setting) = value(flag, name) else { return nil }
        guard let value = ServerConfiguration.parseDuration(text) else {
            throw Invalid(setting: setting, problem: "'\(text)' is not a duration such as 500ms, 10s or 2m (at most 24h)")
        }
        return value
    }
}
