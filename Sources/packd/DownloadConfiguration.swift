import Fetch
import Jobs

/// The download engine's settings of `packd serve`: how many packs run at once, upstream
/// concurrency and politeness, retries, failure tolerance, body and time limits, and the upstream
/// rules (credentials) — resolved like every other setting (flag, then `PACKD_*`, then default).
struct DownloadConfiguration {
    /// Packs downloading at once (the scheduler's slots); the rest wait `queued`.
    var maxActivePacks = 2
    var fetch = FetchConfiguration()
    /// The per-host transfer cap as set. `fetch` holds it at most `maxTransfers` (one node cannot
    /// run more); in cluster mode this is the whole cluster's cap, which the nodes share out.
    var transfersPerHost = FetchConfiguration().maxTransfersPerHost
    var settings = DownloadSettings()

    init() {}

    /// `clustered`: `--max-transfers-per-host` is then the whole cluster's cap, shared out between
    /// the live nodes (`ClusterShare`), so it may exceed one node's `--max-transfers`.
    init(options: ServeCommand.Options, source: ServerConfiguration.Source,
         upstreamPolicy: AddressPolicy, clustered: Bool = false) throws(ServerConfiguration.Invalid) {
        typealias Invalid = ServerConfiguration.Invalid
        maxActivePacks = try source.count(options.maxActivePacks, "MAX_ACTIVE_PACKS", 1...256) ?? maxActivePacks

        let defaults = FetchConfiguration()
        let maxTransfers = try source.count(options.maxTransfers, "MAX_TRANSFERS", 1...10_000) ?? defaults.maxTransfers
        let perHostSetting = source.value(options.maxTransfersPerHost, "MAX_TRANSFERS_PER_HOST")
        let perHost = try source.count(options.maxTransfersPerHost, "MAX_TRANSFERS_PER_HOST", 1...10_000)
            ?? min(defaults.maxTransfersPerHost, maxTransfers)
        if let perHostSetting, perHost > maxTransfers, !clustered {
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
        }
        fetch = FetchConfiguration(maxTransfers: maxTransfers, maxTransfersPerHost: perHost, requestsPerSecondPerHost: rate,
                                   addressPolicy: upstreamPolicy, rules: rules)
        transfersPerHost = perHost

        var settings = DownloadSettings()
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
