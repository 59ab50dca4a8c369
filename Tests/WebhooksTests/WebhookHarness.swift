import Fetch
import Foundation
import Loop
import PackdTestSupport
import Packs
import Store
import Webhooks

/// A dispatcher sending the outbox of a real SQLite store through a real fetcher on its own loop
/// thread, to receivers on 127.0.0.1 (`TestUpstream`). Blocking helpers wait for conditions with
/// deadlines, never sleeps.
final class WebhookHarness: @unchecked Sendable {
    let thread: LoopThread
    let store: SQLiteStore
    let fetcher: Fetcher
    let dispatcher: WebhookDispatcher
    let path: String
    private let lock = NSLock()
    private var recorded: [WebhookDispatcher.Attempt] = []

    /// Pack documents in tests: the snapshot's id and state (the API's renderer is tested there).
    static let render: WebhookDispatcher.PackRenderer = { snapshot in
        Array(#"{"id":\#(snapshot.record.id),"state":"\#(snapshot.record.state.rawValue)"}"#.utf8)
    }

    init(configuration: WebhookDispatcher.Configuration = WebhookHarness.quick(), addressPolicy: AddressPolicy = .loopbackForTests) throws {
        thread = try LoopThread(name: "webhooks-test")
        path = NSTemporaryDirectory() + "packd-webhooks-\(UUID().uuidString).sqlite"
        let (thread, path) = (thread, path)
        store = try thread.sync { try SQLiteStore(path: path, loop: thread.loop, configuration: .init(maximumBatchDelay: .milliseconds(5))) }
        fetcher = try thread.sync { try Fetcher(loop: thread.loop, configuration: FetchConfiguration(addressPolicy: addressPolicy)) }
        let (store, fetcher) = (store, fetcher)
        dispatcher = try thread.sync {
            WebhookDispatcher(loop: thread.loop, store: store, fetcher: fetcher, owner: "test", configuration: configuration,
                              render: Self.render)
        }
        let dispatcher = dispatcher
        try thread.sync {
            dispatcher.onAttempt = { [weak self] attempt in self?.lock.withLock { self?.recorded.append(attempt) } }
            dispatcher.start()
        }
    }

    /// Short delays, so a test sees a whole schedule in seconds.
    static func quick(delays: [Duration] = [.milliseconds(200), .milliseconds(400)], timeout: Duration = .seconds(10),
                      maxInFlight: Int = 16) -> WebhookDispatcher.Configuration {
        WebhookDispatcher.Configuration(maxInFlight: maxInFlight, pollInterval: .milliseconds(20), timeout: timeout,
                                        schedule: RetrySchedule(delays: delays, jitter: 0, maxAge: .seconds(3600)))
    }

    var attempts: [WebhookDispatcher.Attempt] { lock.withLock { recorded } }

    func close() {
        let (dispatcher, fetcher, store) = (dispatcher, fetcher, store)
        try? thread.sync {
            dispatcher.shutdown()
            fetcher.shutdown()
            store.close()
        }
        thread.shutdown()
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    // MARK: Store

    func write<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T) throws -> T {
        try wait { done in self.store.write(operation, then: done) }
    }

    func read<T: Sendable>(_ query: @escaping @Sendable (any StoreReading & PackExporting) throws -> T) throws -> T {
        try wait { done in self.store.read(query, then: done) }
    }

    /// An endpoint stored as the API would store it; its id and secret.
    func endpoint(_ url: String, events: [String] = ["*"], packIDs: [Int64]? = nil) throws -> (id: Int64, secret: String) {
        let secret = WebhookSecret.generate().text
        let now = WebhookStoreRules.nowMilliseconds()
        let id = try write { database in
            try database.createWebhookEndpoint(WebhookEndpointRecord(
                url: url, subscription: WebhookSubscription(events: events, packIDs: packIDs), secret: secret, createdAt: now, updatedAt: now))
        }
        return (id, secret)
    }

    /// A ping to `endpoint`, due now; its delivery.
    @discardableResult
    func ping(_ endpoint: Int64) throws -> WebhookDeliveryRecord {
        let now = WebhookStoreRules.nowMilliseconds()
        let delivery = try write { database in try database.enqueueWebhookPing(endpointID: endpoint, data: #"{"webhook_id":\#(endpoint)}"#, now: now) }
        let dispatcher = dispatcher
        try thread.sync { dispatcher.wake() }
        guard let delivery else { throw HarnessTimeout() }
        return delivery
    }

    func delivery(_ id: Int64, endpoint: Int64) throws -> WebhookDeliveryRecord? {
        try read { try $0.webhookDelivery(id, endpointID: endpoint) }
    }

    /// Waits until the delivery satisfies `predicate`; whether it did.
    func waitFor(_ id: Int64, endpoint: Int64, within seconds: Double = 60,
                 _ predicate: @escaping (WebhookDeliveryRecord) -> Bool) -> Bool {
        eventually(within: seconds) { (try? self.delivery(id, endpoint: endpoint)).flatMap { $0 }.map(predicate) ?? false }
    }

    private func wait<T>(_ start: @escaping (@escaping @Sendable (Result<T, any Error>) -> Void) -> Void) throws -> T {
        let condition = NSCondition()
        nonisolated(unsafe) var result: Result<T, any Error>?
        try thread.sync {
            start { value in
                condition.withLock {
                    result = value
                    condition.broadcast()
                }
            }
        }
        let deadline = Date().addingTimeInterval(60)
        return try condition.withLock {
            while result == nil { if !condition.wait(until: deadline) { break } }
            guard let result else { throw HarnessTimeout() }
            return try result.get()
        }
    }
}

extension TestUpstream.Request {
    /// Whether the request's `webhook-signature` holds a valid signature of its body by `secret`.
    func isSigned(by secret: String) -> Bool {
        guard let key = WebhookSecret(secret), let id = headers["webhook-id"], let timestamp = headers["webhook-timestamp"].flatMap(Int64.init),
              let header = headers["webhook-signature"] else { return false }
        let expected = WebhookSignature.sign(messageID: id, timestamp: timestamp, body: body, secret: key)
        return header.split(separator: " ").contains { String($0) == expected }
    }
}
