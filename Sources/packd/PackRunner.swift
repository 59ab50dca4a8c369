import API
import Events
import Cluster
import Fetch
import Foundation
import Jobs
import Logging
import Loop
import Packs
import PostgresStore
import Store

/// What runs the downloads of this process: Jobs' scheduler over the SQLite file, or, in cluster
/// mode, the cluster scheduler over the shared PostgreSQL with the node's `LISTEN` connection.
/// Both are told of state changes through `PackScheduling` and report to the API's event
/// publisher through `PackActivityListener`; what differs is made here.
enum PackRunner {
    case single(PackScheduler)
    case cluster(ClusterScheduler, ClusterNotifications)

    /// The store and runner of `configuration`'s mode (the database opened, migrated, and in
    /// cluster mode joined).
    static func openStore(_ configuration: ServerConfiguration, loop: EventLoop,
                          onCommitOnWriter: @escaping @Sendable (BatchOutcome) -> Void) throws -> any PackStore {
        if let cluster = configuration.cluster {
            // A node frozen mid-transaction releases its rows once its lease would have run out.
            return try PostgresStore(url: cluster.url, loop: loop, nodeName: "\(ProcessInfo.processInfo.hostName)/\(getpid())",
                                     version: BuildInfo.version,
                                     configuration: .init(keepVersions: configuration.keepVersions,
                                                          idleTransactionTimeout: .milliseconds(Int(cluster.timing.lease * 1000))),
                                     onCommitOnWriter: onCommitOnWriter)
        }
        // Room held back for the state changes and events of a full disk (`StorageReserve`).
        var writer = WriterThread.Configuration(pageSize: configuration.databasePageSize,
                                                storageReserveBytes: WriterThread.Configuration.defaultStorageReserveBytes)
        writer.keepVersions = configuration.keepVersions
        return try SQLiteStore(path: configuration.databasePath, loop: loop, configuration: writer,
                               onCommitOnWriter: onCommitOnWriter)
    }

    /// The runner for `store`: its commits come to the scheduler (`CommittedBatchListener`), which
    /// tells `events` what they mean (`PackActivityListener`); in cluster mode every node's events
    /// come to `events` (`StoredEventListener`) and every node's activity to the scheduler
    /// through the node's `LISTEN` connection. The API is given `scheduling` afterwards.
    static func make(_ configuration: ServerConfiguration, store: any PackStore, events: PackEventPublisher, loop: EventLoop,
                     fetcher: Fetcher, logger: Logger) -> PackRunner {
        let downloads = configuration.downloads
        if let cluster = configuration.cluster, let store = store as? PostgresStore {
            let scheduler = ClusterScheduler(loop: loop, fetcher: fetcher, store: store, listener: events, settings: .init(
                maxActivePacks: downloads.maxActivePacks, timing: cluster.timing, unitTiles: cluster.unitTiles,
                download: downloads.settings, transfersPerHost: downloads.clusterTransfersPerHost,
                requestsPerSecondPerHost: downloads.fetch.requestsPerSecondPerHost))
            scheduler.onError = { what, error in logger.warning("cluster: an operation failed (retried)", metadata: ["operation": "\(what)", "error": "\(error)"]) }
            scheduler.onNotice = { logger.warning("cluster notice", metadata: ["notice": "\($0)"]) }
            let notifications = ClusterNotifications(store: store, loop: loop, lastEventID: events.streams.lastEventID,
                                                     events: events, activity: scheduler)
            return .cluster(scheduler, notifications)
        }
        let scheduler = PackScheduler(loop: loop, fetcher: fetcher, store: store, listener: events,
                                      maxActive: downloads.maxActivePacks, settings: downloads.settings)
        scheduler.onResumeListingFailed = { error, attempt in
            logger.error("listing the packs to continue failed (retrying)", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
        }
        return .single(scheduler)
    }

    /// What the API tells of state changes (`PackScheduling`).
    var scheduling: any PackScheduling {
        switch self {
        case .single(let scheduler): scheduler
        case .cluster(let scheduler, _): scheduler
        }
    }

    /// Who answers `GET /v1/cluster`.
    func statusSource(fetcher: Fetcher, listen: @escaping () -> String, clock: WallClock) -> any ClusterStatusSource {
        switch self {
        case .single: SingleNodeStatus(fetcher: fetcher, listen: listen, clock: clock)
        case .cluster(let scheduler, _): ClusterSchedulerStatus(scheduler: scheduler)
        }
    }

    /// Starts downloading (after the server listens on `address`).
    func start(listeningOn address: String) {
        switch self {
        case .single(let scheduler):
            scheduler.start()
        case .cluster(let scheduler, let notifications):
            scheduler.listening(on: address)
            notifications.start()
            scheduler.start()
        }
    }

    /// Stops every job (packs stay `active`/`queued` for the next start); before the fetcher's shutdown.
    func shutdown() {
        switch self {
        case .single(let scheduler):
            scheduler.shutdown()
        case .cluster(let scheduler, let notifications):
            notifications.close()
            scheduler.shutdown()
        }
    }

    /// After the loop ran out: the last coordination step (cluster mode gives its units back).
    func finishShutdown() {
        if case .cluster(let scheduler, _) = self { scheduler.finishShutdown() }
    }
}
