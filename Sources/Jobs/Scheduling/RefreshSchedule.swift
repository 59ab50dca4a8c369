/// A pack's scheduled refresh (`"refresh": {"every": "P7D"}`), as a pure value: the interval
/// parsed from an ISO 8601 duration, and when the next refresh is due. Each due time is the
/// anchor (now, when it is set or claimed) plus the interval plus a jitter of up to a tenth of
/// the interval (at most a day), drawn anew each time: packs created together, or given the
/// same interval by one script, spread out instead of refreshing — and loading their upstream —
/// at the same moment.
public struct RefreshSchedule: Sendable, Equatable {
    /// The interval as written back (`P7D`, `PT6H`): the input without redundant zero parts.
    public let every: String
    public let seconds: Int64

    /// The shortest interval: a refresh revalidates every stored row of the pack.
    public static let minimumSeconds: Int64 = 3_600
    /// The longest (ten years): far beyond any use, and far from overflowing a time.
    public static let maximumSeconds: Int64 = 10 * 365 * 86_400
    /// Calendar units as fixed lengths: a month is 30 days, a year 365.
    static let unitSeconds: [Character: Int64] = ["Y": 365 * 86_400, "W": 7 * 86_400, "D": 86_400]
    static let timeUnitSeconds: [Character: Int64] = ["H": 3_600, "M": 60, "S": 1]
    static let dateOrder: [Character] = ["Y", "M", "W", "D"]
    static let timeOrder: [Character] = ["H", "M", "S"]

    public struct Invalid: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Parses `PnYnMnWnDTnHnMnS` (integers; at least one part; months are 30 days, years 365).
    public init(every text: String) throws(Invalid) {
        let example = "an ISO 8601 duration such as P7D, P1M or PT12H"
        guard text.count <= 64, text.first == "P", text.count > 1 else {
            throw Invalid(description: "refresh.every must be \(example)")
        }
        var total: Int64 = 0
        var digits = ""
        var inTime = false
        var parts = 0
        var timeParts = 0
        var lastUnit = -1
        var normalised = "P"
        var timePart = ""
        for character in text.dropFirst() {
            if character.isASCII, character.isNumber {
                digits.append(character)
                continue
            }
            if character == "T", !inTime, digits.isEmpty {
                inTime = true
                continue
            }
            let seconds = inTime ? Self.timeUnitSeconds[character] : (character == "M" ? 30 * 86_400 : Self.unitSeconds[character])
            // Each unit once, in ISO 8601's order (years, months, weeks, days; hours, minutes, seconds).
            let order = (inTime ? Self.timeOrder : Self.dateOrder).firstIndex(of: character).map { $0 + (inTime ? 10 : 0) } ?? -1
            guard let seconds, order > lastUnit, let value = Int64(digits), value <= Self.maximumSeconds else {
                throw Invalid(description: "refresh.every must be \(example) (whole numbers only), not \(text)")
            }
            total += value * seconds
            guard total <= Self.maximumSeconds else {
                throw Invalid(description: "refresh.every must be at most ten years")
            }
            if value > 0 {
                if inTime { timePart += "\(value)\(character)" } else { normalised += "\(value)\(character)" }
            }
            digits = ""
            lastUnit = order
            parts += 1
            if inTime { timeParts += 1 }
        }
        guard digits.isEmpty, parts > 0, !inTime || timeParts > 0 else { throw Invalid(description: "refresh.every must be \(example), not \(text)") }
        guard total >= Self.minimumSeconds else {
            throw Invalid(description: "refresh.every must be at least one hour (PT1H); \(text) is \(total) seconds")
        }
        every = normalised + (timePart.isEmpty ? "" : "T" + timePart)
        seconds = total
    }

    /// The most a due time is moved later: a tenth of the interval, at most a day.
    public var jitterSpan: Int64 { min(seconds / 10, 86_400) }

    /// When the next refresh is due after `anchor`: the interval later, plus `random`'s jitter.
    public func next(after anchor: Int64, random: inout some RandomNumberGenerator) -> Int64 {
        anchor + seconds + Int64.random(in: 0...jitterSpan, using: &random)
    }
}
