/// What one quota limits: the names in the API (`quotas` of a tenant) and in refusals.
public enum Quota: String, CaseIterable, Sendable, Codable {
    case storedBytes = "stored_bytes"
    case packs
    case activePacks = "active_packs"
    case tilesPerMonth = "tiles_per_month"
    case servedBytesPerMonth = "served_bytes_per_month"
}

/// A tenant's limits, set by an operator; nil is unlimited.
public struct Quotas: Sendable, Equatable {
    public var storedBytes: Int64?
    public var packs: Int64?
    public var activePacks: Int64?
    public var tilesPerMonth: Int64?
    public var servedBytesPerMonth: Int64?

    public static let unlimited = Quotas()

    public init(storedBytes: Int64? = nil, packs: Int64? = nil, activePacks: Int64? = nil, tilesPerMonth: Int64? = nil,
                servedBytesPerMonth: Int64? = nil) {
        self.storedBytes = storedBytes
        self.packs = packs
        self.activePacks = activePacks
        self.tilesPerMonth = tilesPerMonth
        self.servedBytesPerMonth = servedBytesPerMonth
    }

    public func limit(of quota: Quota) -> Int64? {
        switch quota {
        case .storedBytes: storedBytes
        case .packs: packs
        case .activePacks: activePacks
        case .tilesPerMonth: tilesPerMonth
        case .servedBytesPerMonth: servedBytesPerMonth
        }
    }

    /// The first quota whose limit is negative (a configuration error to refuse), or nil.
    public var invalidQuota: Quota? {
        Quota.allCases.first { (limit(of: $0) ?? 0) < 0 }
    }
}

/// A tenant's usage: totals now, and the monthly counts of `month`.
public struct Usage: Sendable, Equatable {
    public var month: UsageMonth
    public var storedBytes: Int64
    public var packs: Int64
    public var activePacks: Int64
    public var tilesThisMonth: Int64
    public var servedBytesThisMonth: Int64

    public init(month: UsageMonth, storedBytes: Int64 = 0, packs: Int64 = 0, activePacks: Int64 = 0, tilesThisMonth: Int64 = 0,
                servedBytesThisMonth: Int64 = 0) {
        self.month = month
        self.storedBytes = storedBytes
        self.packs = packs
        self.activePacks = activePacks
        self.tilesThisMonth = tilesThisMonth
        self.servedBytesThisMonth = servedBytesThisMonth
    }

    public func used(_ quota: Quota) -> Int64 {
        switch quota {
        case .storedBytes: storedBytes
        case .packs: packs
        case .activePacks: activePacks
        case .tilesPerMonth: tilesThisMonth
        case .servedBytesPerMonth: servedBytesThisMonth
        }
    }

    /// This usage as of `now`: monthly counts of an earlier month start again at zero.
    public func current(at now: Int64) -> Usage {
        let month = UsageMonth(containing: now)
        guard month != self.month else { return self }
        var usage = self
        usage.month = month
        if month > self.month {
            usage.tilesThisMonth = 0
            usage.servedBytesThisMonth = 0
        }
        return usage
    }
}

/// What a request would add to a tenant's usage if it went ahead.
public struct UsageDemand: Sendable, Equatable {
    public var storedBytes: Int64
    public var packs: Int64
    public var activePacks: Int64
    public var tiles: Int64
    public var servedBytes: Int64

    public init(storedBytes: Int64 = 0, packs: Int64 = 0, activePacks: Int64 = 0, tiles: Int64 = 0, servedBytes: Int64 = 0) {
        self.storedBytes = storedBytes
        self.packs = packs
        self.activePacks = activePacks
        self.tiles = tiles
        self.servedBytes = servedBytes
    }

    func amount(of quota: Quota) -> Int64 {
        switch quota {
        case .storedBytes: storedBytes
        case .packs: packs
        case .activePacks: activePacks
        case .tilesPerMonth: tiles
        case .servedBytesPerMonth: servedBytes
        }
    }
}

/// A request refused before any work because it would take a tenant past a quota: what the
/// `403 urn:packd:problem:quota-exceeded` problem names.
public struct QuotaRefusal: Error, Equatable, Sendable, CustomStringConvertible {
    public let quota: Quota
    public let limit: Int64
    /// Usage before the request.
    public let used: Int64
    /// What the request would have added.
    public let requested: Int64

    public var description: String {
        "the request would exceed the tenant's \(quota.rawValue) quota: \(used) used of \(limit), \(requested) more asked"
    }
}

extension Quotas {
    /// The first quota (in `Quota.allCases` order) that `demand` would take past its limit, given
    /// `usage` — or nil when the request fits. Reaching a limit exactly is allowed; a demand of
    /// zero never refuses, even at or over a limit (a quota lowered below what is already used
    /// stops growth, it does not block reads). Sums saturate rather than overflow.
    public func refusal(for demand: UsageDemand, usage: Usage) -> QuotaRefusal? {
        for quota in Quota.allCases {
            guard let limit = limit(of: quota) else { continue }
            let requested = demand.amount(of: quota), used = usage.used(quota)
            guard requested > 0 else { continue }
            let (total, overflow) = used.addingReportingOverflow(requested)
            if overflow || total > limit {
                return QuotaRefusal(quota: quota, limit: limit, used: used, requested: requested)
            }
        }
        return nil
    }

    /// Whether a download that brought the tenant's stored bytes to `total` has crossed the
    /// stored-bytes quota and must stop (`failed`, `quota_exceeded`), as the tile limit stops one.
    public func storedBytesExceeded(total: Int64) -> Bool {
        guard let limit = storedBytes else { return false }
        return total > limit
    }
}
