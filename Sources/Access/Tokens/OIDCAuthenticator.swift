import Fetch
import Foundation
import Loop
import Packs

/// Turns `Authorization: Bearer <JWT>` from the configured OpenID Connect issuer into a
/// `Principal`, on the loop thread and never blocking it.
///
/// A token seen before is answered from `VerifiedTokenCache` (a SHA-256 and a lookup). A new one
/// is verified synchronously (`TokenVerifier`: jwt-kit's signature check) against the keys held.
/// The keys come from the issuer's discovery document and JWKS, fetched through `Fetch` on this
/// loop; jwt-kit turns the JWKS into verifiers in a `Task` (its key collection is an actor), whose
/// result comes back to the loop through `EventLoop.execute`. A token naming an unknown `kid`
/// waits for a fetch — started only when `KeyRefreshSchedule` allows, so a flood of unknown
/// `kid`s costs at most one fetch per `minimumRefetchInterval` — and is refused when none may
/// start or the new keys still lack it.
///
/// Loop thread only (checked in debug builds).
public final class OIDCAuthenticator {
    public typealias Completion = (Result<Principal, TokenRefusal>) -> Void

    public let settings: OIDCSettings
    private let loop: EventLoop
    private let fetcher: Fetcher
    private let verifier: TokenVerifier
    private let wallClock: WallClock
    private let monotonicSeconds: () -> Double
    private var keys = IssuerKeySet.empty
    private var jwksURI: String?
    private var cache: VerifiedTokenCache
    private var schedule: KeyRefreshSchedule
    private var waiting: [(token: String, completion: Completion)] = []

    /// Tokens waiting for a fetch at once; more are refused at once.
    public static let maximumWaiting = 1_024

    /// Key fetches started (discovery and JWKS count as one), for metrics and tests.
    public private(set) var fetchesStarted = 0
    /// Called on the loop after each fetch: the new key set, or why it failed (for the log).
    public var onKeysFetched: ((Result<IssuerKeySet, FetchProblem>) -> Void)?

    /// Why fetching the issuer's keys failed: names the URL and the failure, nothing secret.
    public struct FetchProblem: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    public init(settings: OIDCSettings, loop: EventLoop, fetcher: Fetcher, wallClock: WallClock = .system,
                monotonicSeconds: @escaping () -> Double = OIDCAuthenticator.processSeconds) {
        self.settings = settings
        self.loop = loop
        self.fetcher = fetcher
        self.verifier = TokenVerifier(settings: settings)
        self.wallClock = wallClock
        self.monotonicSeconds = monotonicSeconds
        cache = VerifiedTokenCache(capacity: settings.cacheCapacity)
        schedule = KeyRefreshSchedule(minimumInterval: settings.minimumRefetchInterval, maximumAge: settings.keysMaximumAge)
    }

    private static let origin = ContinuousClock.now

    /// Seconds on the monotonic clock since the first call.
    public static func processSeconds() -> Double {
        let elapsed = ContinuousClock.now - origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// The key ids held now.
    public var keyIDs: [String] {
        loop.assertInLoopThread()
        return keys.kids
    }

    /// Fetches the keys now (at startup), unless a fetch is running or one ran too recently.
    public func refreshKeys() {
        loop.assertInLoopThread()
        startFetch(now: monotonicSeconds())
    }

    /// Checks `token`; `completion` runs on the loop — at once when the token was verified before
    /// or its key is held, after a fetch when it names an unknown key.
    public func authenticate(_ token: some StringProtocol, completion: @escaping Completion) {
        loop.assertInLoopThread()
        let now = wallClock.now
        guard token.utf8.count <= settings.maximumTokenLength else {
            completion(.failure(.malformed("longer than \(settings.maximumTokenLength) bytes")))
            return
        }
        let digest = VerifiedTokenCache.Digest(of: token)
        if let verified = cache.lookup(digest, now: now) {
            completion(.success(verified.principal))
            return
        }
        let monotonic = monotonicSeconds()
        if schedule.isStale(now: monotonic) { startFetch(now: monotonic) }
        switch verifier.verify(token, keys: keys, now: now) {
        case .verified(let verified):
            cache.insert(verified, for: digest)
            completion(.success(verified.principal))
        case .refused(let refusal):
            completion(.failure(refusal))
        case .unknownKey(let kid):
            startFetch(now: monotonic)
            guard schedule.inFlight, waiting.count < Self.maximumWaiting else {
                completion(.failure(keys.isEmpty ? .keysUnavailable : .unknownKey(kid)))
                return
            }
            waiting.append((String(token), completion))
        }
    }

    private func startFetch(now: Double) {
        guard schedule.mayStart(now: now) else { return }
        schedule.started(now: now)
        fetchesStarted += 1
        if let jwksURI {
            fetchKeys(from: jwksURI, rediscoverOnFailure: true)
        } else {
            discover()
        }
    }

    private func request(_ url: String, maximumBytes: Int) -> FetchRequest {
        FetchRequest(url: url, headers: [("Accept", "application/json")], maxBodyBytes: maximumBytes,
                     timeouts: .init(connectMilliseconds: 5_000, lowSpeedSeconds: 10, totalMilliseconds: 15_000))
    }

    private func discover() {
        fetcher.submit(request(settings.discoveryURL, maximumBytes: IssuerMetadata.maximumDocumentBytes)) { [weak self] result in
            guard let self else { return }
            switch Self.body(of: result, url: self.settings.discoveryURL) {
            case .failure(let problem):
                self.finishFetch(.failure(problem))
            case .success(let body):
                switch IssuerMetadata.parse(body, expectedIssuer: self.settings.issuer) {
                case .failure(let problem):
                    self.finishFetch(.failure(FetchProblem(description: "\(self.settings.discoveryURL): \(problem.reason)")))
                case .success(let metadata):
                    self.jwksURI = metadata.jwksURI
                    self.fetchKeys(from: metadata.jwksURI, rediscoverOnFailure: false)
                }
            }
        }
    }

    private func fetchKeys(from url: String, rediscoverOnFailure: Bool) {
        fetcher.submit(request(url, maximumBytes: IssuerKeySet.maximumDocumentBytes)) { [weak self] result in
            guard let self else { return }
            switch Self.body(of: result, url: url) {
            case .failure(let problem):
                if rediscoverOnFailure {
                    // The issuer may have moved its keys: read the discovery document again.
                    self.jwksURI = nil
                    self.discover()
                } else {
                    self.finishFetch(.failure(problem))
                }
            case .success(let body):
                self.build(body, url: url)
            }
        }
    }

    /// jwt-kit makes the verifiers off the loop, on `KeyBuildingExecutor`; the set comes back
    /// through `execute`.
    private func build(_ body: [UInt8], url: String) {
        let bound = LoopBound(self, loop: loop)
        Task.detached(executorPreference: KeyBuildingExecutor.shared) {
            let result: Result<IssuerKeySet, FetchProblem>
            do {
                result = .success(try await IssuerKeySet.make(jwks: body))
            } catch {
                result = .failure(FetchProblem(description: "\(url): \(error)"))
            }
            bound.loop.execute { bound.value.finishFetch(result) }
        }
    }

    private func finishFetch(_ result: Result<IssuerKeySet, FetchProblem>) {
        loop.assertInLoopThread()
        let now = monotonicSeconds()
        if case .success(let newKeys) = result, !newKeys.isEmpty {
            keys = newKeys
            cache.keepOnly(kids: Set(newKeys.kids))
            schedule.finished(loaded: true, now: now)
        } else {
            schedule.finished(loaded: false, now: now)
        }
        onKeysFetched?(result)
        let tokens = waiting
        waiting = []
        let wall = wallClock.now
        for (token, completion) in tokens {
            switch verifier.verify(token, keys: keys, now: wall) {
            case .verified(let verified):
                cache.insert(verified, for: VerifiedTokenCache.Digest(of: token))
                completion(.success(verified.principal))
            case .refused(let refusal):
                completion(.failure(refusal))
            case .unknownKey(let kid):
                completion(.failure(keys.isEmpty ? .keysUnavailable : .unknownKey(kid)))
            }
        }
    }

    private static func body(of result: Result<FetchResponse, FetchError>, url: String) -> Result<[UInt8], FetchProblem> {
        switch result {
        case .failure(let error):
            .failure(FetchProblem(description: "\(url): \(error)"))
        case .success(let response) where response.status != 200:
            .failure(FetchProblem(description: "\(url): HTTP \(response.status)"))
        case .success(let response):
            .success(response.body)
        }
    }
}
