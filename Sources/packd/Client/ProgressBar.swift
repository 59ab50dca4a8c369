import Packs

/// A pack's progress for a person at a terminal: one line redrawn in place (carriage return,
/// erase to the end of the line) with the bar, the percentage, resources and bytes done, the
/// rate and the ETA the server computes, fitted to the terminal's width so it never wraps.
/// State changes, resources that failed for good and the tile limit are printed as lines above
/// the bar.
final class ProgressBar: PackEventView {
    /// Resources failed for good printed one by one; the rest are counted.
    static let shownFailures = 5
    /// Redraws at most this often (the server sends at most 10 progress events a second).
    static let redrawInterval: Duration = .milliseconds(100)

    private let packID: Int64
    private let started = ContinuousClock.now
    private let unicode = Terminal.isUTF8
    private var state: PackState?
    private var progress = PackProgress()
    private var lastDraw: ContinuousClock.Instant?
    private var failures = 0
    private var barShown = false

    init(packID: Int64) {
        self.packID = packID
    }

    func show(_ event: PackEvent, id: Int64?) {
        switch event {
        case .progress(let update):
            let changed = update.state != state
            state = update.state
            progress = update.progress
            draw(force: changed)
        case .state(let change):
            if let previous = change.previousState ?? state, previous != change.state {
                var message = "pack \(packID): \(previous) \(unicode ? "→" : "->") \(change.state)"
                if let error = change.error { message += ": " + PackText.describe(error) }
                printLine(message)
            }
            state = change.state
            draw(force: true)
        case .resourceError(let failure) where !failure.willRetry:
            failures += 1
            if failures <= Self.shownFailures {
                printLine("  gave up: \(PackText.reason(status: failure.status, error: failure.error, attempts: failure.attempt)): \(failure.url)")
            } else if failures == Self.shownFailures + 1 {
                printLine("  … more resources failed (packd show \(packID) lists them)")
            }
        case .resourceError:
            break
        case .tileLimitExceeded(let limit):
            printLine("pack \(packID): needs \(HumanUnits.count(limit.count)) tiles, the limit is \(HumanUnits.count(limit.maximum))")
        case .packRemoved:
            printLine("pack \(packID) was deleted")
        case .versionCreated(let created):
            let version = created.version
            printLine("pack \(created.packID): version \(version.version), \(HumanUnits.count(version.changedResources)) changed, "
                      + "\(HumanUnits.count(version.removedResources)) removed")
        case .startAreaReady(let ready):
            printLine("pack \(packID): the start area (\(HumanUnits.count(Int64(ready.startArea.radiusM))) m around "
                      + "\(ready.startArea.longitude), \(ready.startArea.latitude)) is stored and usable offline")
        }
    }

    func finish() {
        guard barShown else { return }
        draw(force: true)
        Terminal.standardOutput("\n")
        barShown = false
    }

    /// A line above the bar: the bar's line is cleared, the message printed, the bar redrawn.
    private func printLine(_ message: String) {
        Terminal.standardOutput("\r\u{1B}[K" + message + "\n")
        if barShown { draw(force: true) }
    }

    private func draw(force: Bool) {
        let now = ContinuousClock.now
        if !force, let lastDraw, now - lastDraw < Self.redrawInterval { return }
        lastDraw = now
        barShown = true
        Terminal.standardOutput("\r" + line(width: Terminal.columns - 1) + "\u{1B}[K")
    }

    /// The bar's line in at most `width` columns: the bar shrinks first, then the optional parts
    /// go, the least useful first.
    func line(width: Int) -> String {
        let complete = state == .complete
        let expected = progress.expectedResources
        let fraction: Double? = complete ? 1 : expected > 0 ? min(Double(progress.completedResources) / Double(expected), 1) : nil
        let percent = fraction.map { (progress.expectedIsPrecise || complete ? "" : "~") + HumanUnits.oneDecimal($0 * 100) + "%" } ?? "--.-%"
        let counts = HumanUnits.count(progress.completedResources) + "/" + (expected > 0 ? HumanUnits.count(expected) : "?")
        let rate = progress.bytesPerSecond.map(HumanUnits.rate) ?? "-- B/s"
        let time: String
        if complete {
            time = "in " + HumanUnits.duration(Int64((ContinuousClock.now - started) / .seconds(1)))
        } else {
            time = "ETA " + (progress.etaSeconds.map(HumanUnits.duration) ?? "--:--")
        }
        var parts = ["pack \(packID)", (state?.rawValue ?? "").padding(8), percent.padding(6, left: true), counts,
                     HumanUnits.bytes(progress.completedBytes), rate, time]
        if progress.failedResources > 0 { parts.append("\(HumanUnits.count(progress.failedResources)) failed") }
        // Dropped in this order when the terminal is narrow: failures, bytes, rate, counts, the name.
        let droppable = [7, 4, 5, 3, 0]
        var dropIndex = 0
        while true {
            let text = parts.filter { !$0.isEmpty }.joined(separator: "  ")
            let room = width - text.count - 2
            if room >= 10 || dropIndex >= droppable.count {
                guard room >= 3 else { return String(text.prefix(max(width, 0))) }
                let cells = min(room - 2, 40)
                return bar(fraction ?? 0, cells: cells) + "  " + text
            }
            if droppable[dropIndex] < parts.count { parts[droppable[dropIndex]] = "" }
            dropIndex += 1
        }
    }

    /// `[█████▌    ]` in `cells + 2` columns (eighth blocks), or `[#####     ]` without UTF-8.
    private func bar(_ fraction: Double, cells: Int) -> String {
        let eighths = Int((fraction * Double(cells * 8)).rounded(.down))
        let full = min(eighths / 8, cells)
        if !unicode {
            return "[" + String(repeating: "#", count: full) + String(repeating: "-", count: cells - full) + "]"
        }
        let partials = ["", "▏", "▎", "▍", "▌", "▋", "▊", "▉"]
        let partial = full < cells ? partials[eighths % 8] : ""
        let empty = cells - full - (partial.isEmpty ? 0 : 1)
        return "▕" + String(repeating: "█", count: full) + partial + String(repeating: " ", count: empty) + "▏"
    }
}

extension String {
    /// Padded with spaces to `width` characters (on the left for numbers).
    fileprivate func padding(_ width: Int, left: Bool = false) -> String {
        let fill = String(repeating: " ", count: max(width - count, 0))
        return left ? fill + self : self + fill
    }
}
