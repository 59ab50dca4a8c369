import ArgumentParser
import Packs

/// `packd versions ID`: the pack's current version and its retained versions, newest first,
/// with what each changed (`GET /v1/packs/{id}/versions`).
struct VersionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List a pack's retained versions and what each changed.",
        discussion: "A terminal gets a table; anything else the API's JSON document, one line.")

    @OptionGroup var pack: PackReference

    func run() throws {
        try ClientExit.run("versions") {
            let list = try pack.connection.client().get(PackVersionList.self, "/v1/packs/\(pack.packID)/versions")
            guard pack.output.forPerson else { return PackText.printJSON(list) }
            Terminal.standardOutput(Self.text(list))
        }
    }

    /// One line per version: number, time, size, what changed since the one before.
    static func text(_ list: PackVersionList) -> String {
        guard !list.versions.isEmpty else {
            return "pack \(list.packID) has no version yet: it gets version 1 when it first completes\n"
        }
        var lines = ["pack \(list.packID): version \(list.version)",
                     "version  created               resources  tiles      size       changed    changed size  removed"]
        for version in list.versions {
            let columns: [(String, Int)] = [
                ("\(version.version)", 9), (version.createdAt.rfc3339, 22), (HumanUnits.count(version.resources), 11),
                (HumanUnits.count(version.tiles), 11), (HumanUnits.bytes(version.bytes), 11),
                (HumanUnits.count(version.changedResources), 11), (HumanUnits.bytes(version.changedBytes), 14),
                (HumanUnits.count(version.removedResources), 0),
            ]
            lines.append(columns.map { text, width in width == 0 ? text : text.padding(toLength: max(width, text.count + 1), withPad: " ", startingAt: 0) }
                .joined())
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
