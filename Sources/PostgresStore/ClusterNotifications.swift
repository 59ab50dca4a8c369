import Foundation
import Loop
import Packs
import Postgres

/// What one node hears of the others: a `LISTEN` connection on the loop (`PostgresLoopConnection`:
/// notifications are small and arrive unasked) for `EventChannel` and `CommitChannel`. Another
/// node's commit moves the store's change counts of the packs it names (all of them after a
/// reconnection, for what may have been missed); an event anywhere makes the node read the
/// events after the last it delivered, in id order — so every node's streams carry every node's
/// events, within a notification's latency. A poll every `pollInterval` covers a notification
/// lost with a broken connection, which is made again (and what it missed read from the table).
/// Loop thread only.
public final class ClusterNotifications {
    /// Hears the events committed by any node after the last delivered, oldest first (the API's
    /// event publisher). Weak.
    private weak var events: (any StoredEventListener)?
    /// Hears that any node committed or published something (the cluster scheduler looks for
    /// work). Weak.
    private weak var activity: (any ClusterActivityListener)?

    private let store: PostgresStore
    private let loop: EventLoop
    private let pollInterval: UInt64
    private var listener: PostgresLoopConnection?
    private var connecting = false
    private let poll: LoopTimer
    private var lastDelivered: Int64
    private var reading = false
    private var readAgain = false
    private var closed = false
    /// How many events one read takes; more are read right after.
    static let page = 1000

    /// Listens from `start()` on; events after `lastEventID` go to `events`, every notification
    /// to `activity`. Loop thread.
    public init(store: PostgresStore, loop: EventLoop, lastEventID: Int64, events: any StoredEventListener,
                activity: any ClusterActivityListener, pollInterval: UInt64 = 1000) {
        self.store = store
        self.events = events
        self.activity = activity
        self.loop = loop
        self.pollInterval = pollInterval
        lastDelivered = lastEventID
        poll = LoopTimer(loop: loop)
        poll.unref()
    }

    public func start() {
        connect()
        poll.start(after: pollInterval, repeat: pollInterval) { [weak self] in
            guard let self else { return }
            if listener == nil { connect() }
            readEvents()
        }
    }

    public func close() {
        closed = true
        poll.close()
        listener?.close()
        listener = nil
    }

    /// Connects on the thread pool (connecting blocks), then listens on the loop.
    private func connect() {
        guard !connecting, !closed else { return }
        connecting = true
        let (url, loop) = (store.url, loop)
        loop.runOnThreadPool({ () -> Result<LoopBound<PostgresConnection>, any Error> in
            Result {
                let connection = try PostgresConnection(url: url, applicationName: "packd-listen")
                try connection.listen(EventChannel.name)
                try connection.listen(CommitChannel.name)
                return LoopBound(connection, loop: loop)
            }
        }, then: { [weak self] result in
            guard let self else { return }
            connecting = false
            guard !closed, case .success(let connection) = result,
                  let listener = try? PostgresLoopConnection(loop: loop, connection: connection.value) else { return }
            listener.onNotification = { [weak self] notification in self?.heard(notification) }
            listener.onConnectionLost = { [weak self] _ in self?.listener = nil }
            self.listener = listener
            // What was committed while nobody listened: events are read again, and any pack may
            // have changed.
            store.noteRemoteCommit()
            readEvents()
            activity?.otherNodeActed()
        })
    }

    private func heard(_ notification: PostgresNotification) {
        if notification.channel == CommitChannel.name {
            let (node, packs) = CommitChannel.parse(notification.payload)
            // This node's own commits were marked by its writer before anyone heard of them.
            if node != store.node { store.noteRemoteCommit(packs: packs) }
        }
        if notification.channel == EventChannel.name, let id = Int64(notification.payload), id <= lastDelivered {
            return
        }
        if notification.channel == EventChannel.name { readEvents() }
        activity?.otherNodeActed()
    }

    /// Reads the events after the last delivered; one read at a time, another right after when
    /// more was heard meanwhile or a page was full.
    private func readEvents() {
        guard !closed else { return }
        guard !reading else {
            readAgain = true
            return
        }
        reading = true
        readAgain = false
        let after = lastDelivered
        store.read({ reader in try reader.events(after: after, packID: nil, limit: Self.page) }) { [weak self] result in
            guard let self else { return }
            reading = false
            guard !closed else { return }
            if case .success(let events) = result, let last = events.last {
                lastDelivered = max(lastDelivered, last.id)
                self.events?.eventsCommitted(events)
                if events.count == Self.page { readAgain = true }
            }
            if readAgain { readEvents() }
        }
    }
}

/// What a node does when another node acted (`ClusterNotifications`): the cluster scheduler looks
/// for work and for packs that stopped being active. Loop thread.
public protocol ClusterActivityListener: AnyObject {
    func otherNodeActed()
}
