import Foundation
import Packs

/// Packs as the client subcommands print them: one JSON document per line for scripts (Packs'
/// encoding, the same bytes the API serves), aligned text for a person.
enum PackText {
    static func printJSON(_ value: some Encodable) {
        guard let bytes = try? SortedJSONEncoder.encode(value) else { return }
        Terminal.standardOutput(line: bytes)
    }

    /// `ID STATE DONE SIZE NAME` rows, with the header line first when `header`.
    static func rows(_ packs: [Pack], header: Bool) -> String {
        var text = header ? "ID      STATE     DONE            SIZE       NAME\n" : ""
        for pack in packs {
            let id = String(pack.id).padding(toLength: 7, withPad: " ", startingAt: 0)
            let state = pack.state.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
            let done = percent(pack).padding(toLength: 15, withPad: " ", startingAt: 0)
            let size = HumanUnits.bytes(pack.progress.completedBytes).padding(toLength: 10, withPad: " ", startingAt: 0)
            text += "\(id) \(state) \(done) \(size) \(pack.name ?? "")\n"
        }
        return text
    }

    /// `100.0% of 2,311`, `~12.5% of 300`, or `-` before the plan is known.
    static func percent(_ pack: Pack) -> String {
        let progress = pack.progress
        guard progress.expectedResources > 0 else { return pack.state == .complete ? "100.0%" : "-" }
        let share = min(Double(progress.completedResources) / Double(progress.expectedResources), 1) * 100
        return (progress.expectedIsPrecise ? "" : "~") + HumanUnits.oneDecimal(share) + "% of " + HumanUnits.count(progress.expectedResources)
    }

    /// Everything about one pack, a field a line.
    static func details(_ pack: Pack, failures: ResourceErrorList?) -> String {
        var lines = ["pack \(pack.id)" + (pack.name.map { "  \"\($0)\"" } ?? "")]
        func field(_ name: String, _ value: String) { lines.append(name.padding(toLength: 11, withPad: " ", startingAt: 0) + value) }
        field("state", pack.state.rawValue + (pack.completedAt.map { " (completed \($0))" } ?? ""))
        field("region", region(pack.region))
        let progress = pack.progress
        var done = "\(percent(pack)) resources, \(HumanUnits.count(progress.completedTiles)) tiles, \(HumanUnits.bytes(progress.completedBytes))"
        if progress.failedResources > 0 { done += ", \(HumanUnits.count(progress.failedResources)) failed" }
        field("progress", done)
        if let rate = progress.bytesPerSecond {
            field("rate", HumanUnits.rate(rate) + (progress.etaSeconds.map { ", ETA " + HumanUnits.duration($0) } ?? ""))
        }
        if let maxTiles = pack.limits.maxTiles { field("max tiles", HumanUnits.count(maxTiles)) }
        if let cap = pack.limits.maxBytesPerSecond { field("bandwidth", "at most " + HumanUnits.rate(cap)) }
        field("created", pack.createdAt.rfc3339)
        field("updated", pack.updatedAt.rfc3339)
        if let error = pack.error {
            field("error", describe(error))
        }
        if let updateAvailable = pack.updateAvailable { field("update", updateAvailable ? "available" : "none") }
        if pack.version > 0 { field("version", "\(pack.version) (packd versions \(pack.id) lists them)") }
        if let refresh = pack.refresh {
            field("refresh", "every \(refresh.every)" + (pack.nextRefreshAt.map { ", next \($0.rfc3339)" } ?? ""))
        }
        if let failures, !failures.errors.isEmpty {
            field("failures", "\(HumanUnits.count(failures.total)) resources, latest first:")
            for failure in failures.errors {
                lines.append("  \(reason(status: failure.status, error: failure.error, attempts: failure.attempts)), \(failure.lastAttemptAt): \(failure.url)")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Why a resource failed for good: `status 403 after 1 attempt` (the upstream's status, else
    /// the transport error).
    static func reason(status: (some BinaryInteger)?, error: String?, attempts: some BinaryInteger) -> String {
        (status.map { "status \($0)" } ?? error ?? "no answer") + " after \(attempts) attempt" + (attempts == 1 ? "" : "s")
    }

    /// `code: detail (403 for URL)`.
    static func describe(_ error: PackError) -> String {
        var text = "\(error.code.rawValue): \(error.detail)"
        switch (error.status, error.url) {
        case (let status?, let url?): text += " (\(status) for \(url))"
        case (let status?, nil): text += " (status \(status))"
        case (nil, let url?): text += " (\(url))"
        case (nil, nil): break
        }
        return text
    }

    /// `style URL, bounds w,s,e,n, zooms 0-12` in a line.
    static func region(_ region: Region) -> String {
        var parts: [String] = []
        if let style = region.styleURL { parts.append("style " + style) }
        if let archive = region.pmtiles { parts.append("pmtiles " + archive) }
        if let tiles = region.tiles { parts.append("tiles " + tiles.joined(separator: " ")) }
        if let bounds = region.bounds { parts.append("bounds " + bounds.map { number($0) }.joined(separator: ",")) }
        if region.geometry != nil { parts.append("a GeoJSON geometry") }
        let minimum = region.minZoom.map(number) ?? "0"
        parts.append("zooms " + minimum + "-" + (region.maxZoom.map(number) ?? "(source maxzoom)"))
        return parts.joined(separator: ", ")
    }

    private static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }
}
