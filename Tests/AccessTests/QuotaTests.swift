@testable import Access
import Testing

@Suite struct QuotaTests {
    let month = UsageMonth(year: 2026, month: 5)!

    @Test func refusesNamingTheQuotaTheLimitAndTheUsage() {
        let quotas = Quotas(storedBytes: 1_000, packs: 3, activePacks: 1, tilesPerMonth: 500, servedBytesPerMonth: nil)
        let usage = Usage(month: month, storedBytes: 900, packs: 2, activePacks: 0, tilesThisMonth: 400, servedBytesThisMonth: 1 << 40)
        #expect(quotas.refusal(for: UsageDemand(packs: 1, activePacks: 1, tiles: 100), usage: usage) == nil, "exactly at the limits")
        #expect(quotas.refusal(for: UsageDemand(packs: 1, activePacks: 1, tiles: 101), usage: usage)
            == QuotaRefusal(quota: .tilesPerMonth, limit: 500, used: 400, requested: 101))
        #expect(quotas.refusal(for: UsageDemand(packs: 2), usage: usage) == QuotaRefusal(quota: .packs, limit: 3, used: 2, requested: 2))
        #expect(quotas.refusal(for: UsageDemand(storedBytes: 101, packs: 5), usage: usage)
            == QuotaRefusal(quota: .storedBytes, limit: 1_000, used: 900, requested: 101), "the first quota in order is named")
        #expect(quotas.refusal(for: UsageDemand(servedBytes: .max), usage: usage) == nil, "unlimited")
        #expect(QuotaRefusal(quota: .packs, limit: 3, used: 2, requested: 2).description
            == "the request would exceed the tenant's packs quota: 2 used of 3, 2 more asked")
    }

    @Test func aQuotaBelowUsageStopsGrowthNotReads() {
        let quotas = Quotas(storedBytes: 100)
        let usage = Usage(month: month, storedBytes: 500)
        #expect(quotas.refusal(for: UsageDemand(), usage: usage) == nil)
        #expect(quotas.refusal(for: UsageDemand(storedBytes: 1), usage: usage)?.quota == .storedBytes)
        #expect(quotas.storedBytesExceeded(total: 101) && !quotas.storedBytesExceeded(total: 100))
        #expect(!Quotas.unlimited.storedBytesExceeded(total: .max))
    }

    @Test func sumsSaturateInsteadOfOverflowing() {
        let quotas = Quotas(tilesPerMonth: .max)
        let usage = Usage(month: month, tilesThisMonth: .max - 1)
        #expect(quotas.refusal(for: UsageDemand(tiles: 1), usage: usage) == nil)
        #expect(quotas.refusal(for: UsageDemand(tiles: 2), usage: usage)?.quota == .tilesPerMonth)
        #expect(Quotas(packs: -1).invalidQuota == .packs && Quotas(packs: 0).invalidQuota == nil)
    }

    @Test func monthsAreUTCCalendarMonths() {
        #expect(UsageMonth(containing: 1_767_225_599).description == "2025-12")
        #expect(UsageMonth(containing: 1_767_225_600).description == "2026-01")
        #expect(UsageMonth("2026-01")?.start == 1_767_225_600)
        #expect(UsageMonth("2025-12")?.end == 1_767_225_600)
        #expect(UsageMonth("2024-02")?.end == UsageMonth("2024-03")?.start)
        #expect(UsageMonth("2024-03")!.start - UsageMonth("2024-02")!.start == 29 * 86_400, "a leap February")
        #expect(UsageMonth("2023-03")!.start - UsageMonth("2023-02")!.start == 28 * 86_400)
        #expect(UsageMonth("2026-12")?.next.description == "2027-01")
        for bad in ["2026-13", "2026-00", "2026-1", "26-01", "2026/01", "20a6-01", "", "1969-12"] {
            #expect(UsageMonth(bad) == nil, "\(bad)")
        }
        #expect(UsageMonth("2026-01")! < UsageMonth("2026-02")! && UsageMonth("2025-12")! < UsageMonth("2026-01")!)
    }

    @Test func monthlyCountsStartAgainInANewMonth() {
        let usage = Usage(month: UsageMonth("2026-01")!, storedBytes: 7, packs: 2, tilesThisMonth: 900, servedBytesThisMonth: 5)
        let february = usage.current(at: UsageMonth("2026-02")!.start)
        #expect(february == Usage(month: UsageMonth("2026-02")!, storedBytes: 7, packs: 2, tilesThisMonth: 0, servedBytesThisMonth: 0))
        #expect(usage.current(at: UsageMonth("2026-01")!.end - 1) == usage)
    }
}
