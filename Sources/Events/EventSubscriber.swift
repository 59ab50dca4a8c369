import Packs
import Server

/// One open event stream and the events it has not been able to take yet.
///
/// The queue is what isolates a slow client: the broadcaster never waits for a socket, it hands
/// every event here and moves on. When the queue is full the oldest `progress` event goes (a later
/// one supersedes it); events of the other kinds are never dropped, so a client whose queue fills
/// with them alone is too far behind to catch up in place and is disconnected: it reconnects with
/// `Last-Event-ID` and gets a replay or a snapshot. Loop thread only.
final class EventSubscriber {
    enum Delivery {
        case accepted
        /// The queue is full of events that must not be dropped.
        case overflow
    }

    let filter: EventFilter
    let stream: ResponseStream
    private let queueLimit: Int
    /// An event waiting for the socket, already framed (the frame is shared by every subscriber).
    struct Pending {
        let kind: PackEvent.Kind
        let frame: [UInt8]
    }

    /// Undelivered events from `head` on; compacted when half of it is spent.
    private var queue: [Pending] = []
    private var head = 0
    private(set) var droppedProgress = 0
    /// The stream's subject is gone (`pack_removed`): end it once the queue is written.
    var endsWhenDrained = false

    /// Nothing more will be written: the stream can be finished.
    var isDone: Bool { endsWhenDrained && queuedCount == 0 }

    init(filter: EventFilter, stream: ResponseStream, queueLimit: Int) {
        self.filter = filter
        self.stream = stream
        self.queueLimit = max(1, queueLimit)
    }

    var queuedCount: Int { queue.count - head }

    /// Events up to this id were already sent (a cluster node resuming a client ahead of it).
    var floor: Int64 = 0

    /// Takes `event`, whose `frame` the broadcaster computed once for all subscribers.
    func deliver(_ event: BroadcastEvent, frame: [UInt8]) -> Delivery {
        if event.id <= floor { return .accepted }
        if queuedCount == 0 && stream.canWrite {
            stream.write(frame)
            return .accepted
        }
        if queuedCount >= queueLimit {
            guard let oldest = queue[head...].firstIndex(where: { $0.kind.isDroppable }) else { return .overflow }
            queue.remove(at: oldest)
            droppedProgress += 1
        }
        queue.append(Pending(kind: event.kind, frame: frame))
        // The socket may have drained since the last event without the stream noticing yet.
        if stream.canWrite { drain() }
        return .accepted
    }

    /// Writes queued events while the socket takes them, several frames per write.
    func drain() {
        while queuedCount > 0 && stream.canWrite {
            var batch: [UInt8] = []
            while head < queue.count && batch.count < 32 * 1024 {
                batch.append(contentsOf: queue[head].frame)
                head += 1
            }
            stream.write(batch)
        }
        if head > 0 && head * 2 >= queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }

    /// A comment line that keeps proxies from closing an idle stream; skipped when the client is
    /// behind anyway (the queued events will show it the stream is alive).
    func heartbeat() {
        guard queuedCount == 0, stream.canWrite else { return }
        stream.write(": heartbeat\n\n")
    }

    /// Writes `frames` ahead of anything live (replay or snapshot at subscription time).
    func writeInitial(_ frames: [UInt8]) {
        guard !frames.isEmpty else { return }
        stream.write(frames)
    }

    func releaseQueue() {
        queue = []
        head = 0
    }
}
