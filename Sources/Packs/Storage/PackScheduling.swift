/// What the API tells the component that runs downloads when a pack's state changed under it.
/// One implementation per mode — the single-node scheduler (`Jobs.PackScheduler`) and, in
/// cluster mode, one that shares a pack's work units between nodes — and the API sees only this.
/// Loop thread.
public protocol PackScheduling: AnyObject {
    /// The pack is `queued` in the store (created with `start`, resumed, or to revalidate).
    func packQueued(_ packID: Int64)
    /// The pack left `queued`/`active` (suspended): its transfers stop now.
    func packSuspended(_ packID: Int64)
    /// The pack is gone (deleted, or a storage reset).
    func packRemoved(_ packID: Int64)
}

/// What the API tells the component that runs scheduled refreshes (`Jobs.PackRefresher`): a
/// pack's schedule was set or changed, so the next due time may be earlier than it planned for.
/// Loop thread.
public protocol RefreshScheduling: AnyObject {
    func rescheduled()
}
