/// The last hop of a store-numbered event (cluster mode): events any node committed to the
/// shared log, as they reach this node (`LISTEN`/`NOTIFY`, then a read of the log), oldest
/// first and each once. The API's `PackEventPublisher` hears them and delivers them to this
/// node's streams. Loop thread.
public protocol StoredEventListener: AnyObject {
    func eventsCommitted(_ events: [StoredEvent])
}
