/// Where a pack is in its life (api.md, "Packs"). The only place a state is spelled as text is
/// its raw value here: the database column, the API and the events all go through this type.
public enum PackState: String, Sendable, Codable, CaseIterable, Hashable, CustomStringConvertible {
    /// Never started, or suspended.
    case inactive
    /// Waiting for a download slot.
    case queued
    /// Downloading or revalidating.
    case active
    /// Every expected resource is stored.
    case complete
    /// Stopped; the pack's `error` says why.
    case failed

    public var description: String { rawValue }

    /// A download or revalidation runs, or is waiting to: what a restarted server continues.
    public var isScheduled: Bool { self == .queued || self == .active }
}
