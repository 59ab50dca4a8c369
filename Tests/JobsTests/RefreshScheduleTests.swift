import Jobs
import Testing

/// `RefreshSchedule`: ISO 8601 durations as `refresh.every` takes them, and jittered due times.
@Suite struct RefreshScheduleTests {
    static let durations: [(text: String, normalised: String, seconds: Int64)] = [
        ("P7D", "P7D", 604_800), ("PT1H", "PT1H", 3_600), ("PT60M", "PT60M", 3_600), ("P1M", "P1M", 2_592_000),
        ("P1Y", "P1Y", 31_536_000), ("P2W", "P2W", 1_209_600), ("P1DT12H", "P1DT12H", 129_600),
        ("P0DT2H0M", "PT2H", 7_200), ("PT3600S", "PT3600S", 3_600),
    ]

    @Test func durationsParse() throws {
        for duration in Self.durations {
            let schedule = try RefreshSchedule(every: duration.text)
            #expect(schedule.seconds == duration.seconds && schedule.every == duration.normalised, "\(duration.text)")
        }
    }

    @Test(arguments: ["", "P", "PT", "7D", "P7", "P1.5D", "P-1D", "PT59M", "PT0S", "P1H", "PT1D", "P1DT", "p7d", "P7D ", "P4000Y", "P2D1W", "PT1H1H", "P1DT1S1M",
                      "P" + String(repeating: "9", count: 80) + "D"])
    func nonsenseAndTooShortAreRefused(_ text: String) {
        #expect(throws: RefreshSchedule.Invalid.self) { try RefreshSchedule(every: text) }
    }

    @Test func theMessageSaysWhatIsWrong() {
        #expect {
            try RefreshSchedule(every: "PT30M")
        } throws: { error in
            (error as? RefreshSchedule.Invalid)?.description == "refresh.every must be at least one hour (PT1H); PT30M is 1800 seconds"
        }
    }

    /// Packs given the same interval at the same moment spread over a tenth of it (a day at most).
    @Test func dueTimesAreJitteredWithinATenthOfTheInterval() throws {
        var random = SystemRandomNumberGenerator()
        let hourly = try RefreshSchedule(every: "PT1H")
        let due = (0..<1_000).map { _ in hourly.next(after: 1_000_000, random: &random) }
        #expect(due.allSatisfy { (1_003_600...1_003_960).contains($0) })
        #expect(Set(due).count > 300, "1,000 packs created together get hundreds of distinct due times")
        let monthly = try RefreshSchedule(every: "P1M")
        #expect(monthly.jitterSpan == 86_400, "at most a day")
    }
}
