import CCurl
import Loop

/// The host-queue policy: which queue a transfer waits in, the limits and rate each host gets
/// (its rule, the learnt limit, the cluster share), and forgetting hosts with nothing to do.
extension Fetcher {
    /// Queues a waiting transfer on its host and remembers the host for its owner.
    func enqueue(_ id: UInt64, on target: WireTarget, canonical: String, owner: UInt64, first: Bool = false) {
        let key = hostQueue(for: target, canonical: canonical)
        if first { hosts[key]?.prepend(id) } else { hosts[key]?.append(id) }
        queuedHosts.insert(key)
        if ownerHosts[owner]?.contains(key) != true {
            if ownerHosts[owner] == nil, ownerHosts.count >= Self.maxOwnersTracked, let any = ownerHosts.keys.first {
                ownerHosts[any] = nil
            }
            if ownerHosts[owner, default: []].count < Self.maxHostsPerOwner { ownerHosts[owner, default: []].insert(key) }
        }
    }

    /// The key of `target`'s host entry, made if new, with the policy of the rules matching
    /// `canonical` applied (the stricter of what earlier requests brought).
    func hostQueue(for target: WireTarget, canonical: String) -> String {
        let key = target.hostKey
        let policy = rules.policy(for: canonical)
        if var host = hosts[key] {
            if !policy.isEmpty {
                let tightened = host.policy.tightened(by: policy)
                if tightened != host.policy {
                    host.policy = tightened
                    applyPolicy(to: &host)
                    hosts[key] = host
                }
            }
            return key
        }
        if hosts.count >= Self.maxRememberedHosts { forgetIdleHosts() }
        let now = ContinuousClock.now
        let defaultPort = target.scheme == "https" ? 443 : 80
        let name = target.port == defaultPort ? Self.bracketed(target.host) : "\(Self.bracketed(target.host)):\(target.port)"
        let (maximum, adaptive) = ceiling(policy, httpVersion: 0)
        var host = HostQueue(name: name, limiter: HostConcurrencyLimiter(settings: configuration.limiter, maximum: maximum,
                                                                         adaptive: adaptive), now: now)
        host.policy = policy
        applyPolicy(to: &host)
        hosts[key] = host
        return key
    }

    static func bracketed(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }

    /// Sets the host's ceiling and rate from its policy, the server-wide settings and its protocol:
    /// a rule's `max_transfers`, else `--max-transfers-per-host`, else the protocol's ceiling; a
    /// rule's `adaptive: false` pins the limit to that cap (or `fixedTransfersPerHost`).
    func applyPolicy(to host: inout HostQueue) {
        let (maximum, adaptive) = ceiling(host.policy, httpVersion: host.httpVersion)
        host.limiter.setMaximum(maximum, adaptive: adaptive)
        var rate = host.policy.requestsPerSecond ?? configuration.requestsPerSecondPerHost
        if let shared = hostShare?.requestsPerSecondPerHost { rate = min(shared, rate ?? .infinity) }
        if let rate, host.bucket?.rate != rate {
            host.bucket = TokenBucket(rate: rate, now: .now)
        } else if rate == nil {
            host.bucket = nil
        }
    }

    func ceiling(_ policy: HostPolicy, httpVersion: Int) -> (maximum: Int, adaptive: Bool) {
        let explicit = policy.maxTransfers ?? configuration.maxTransfersPerHost
        if policy.adaptive == false { return (explicit ?? FetchConfiguration.fixedTransfersPerHost, false) }
        let protocolCeiling = httpVersion >= Int(CURL_HTTP_VERSION_2_0)
            ? configuration.limiter.http2Maximum : configuration.limiter.http1Maximum
        return (explicit ?? protocolCeiling, true)
    }

    /// Drops the least recently used idle hosts, down to three quarters of the bound.
    func forgetIdleHosts() {
        let now = ContinuousClock.now
        let idle = hosts.filter { $0.value.isIdle(now: now) }.sorted { $0.value.lastUsed < $1.value.lastUsed }
        for (key, _) in idle.prefix(max(0, hosts.count - Self.maxRememberedHosts * 3 / 4)) {
            hosts[key] = nil
        }
    }
}
