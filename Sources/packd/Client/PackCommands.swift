import ArgumentParser
import Foundation
import Packs

extension PackState: ExpressibleByArgument {}

/// The arguments of a subcommand about one pack: the server, the output, the pack's id.
struct PackReference: ParsableArguments {
    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The pack's id.") var packID: Int64

    /// `POST /v1/packs/{id}/suspend` or `…/resume`; prints the pack as it is afterwards.
    func changeState(_ action: String) throws {
        try ClientExit.run(action) {
            let pack = try connection.client().send(Pack.self, "POST", "/v1/packs/\(packID)/\(action)")
            if output.forPerson {
                Terminal.standardOutput("pack \(packID): \(pack.state.rawValue)\n")
            } else {
                PackText.printJSON(pack)
            }
        }
    }
}

/// `packd show ID`: one pack (and, when some failed, its first failed resources).
struct ShowCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show a pack of a running packd.")

    @OptionGroup var pack: PackReference

    func run() throws {
        try ClientExit.run("show") {
            let client = try pack.connection.client()
            let shown = try client.get(Pack.self, "/v1/packs/\(pack.packID)")
            guard pack.output.forPerson else { return PackText.printJSON(shown) }
            var failures: ResourceErrorList?
            if shown.progress.failedResources > 0 || shown.state == .failed {
                failures = try client.get(ResourceErrorList.self, "/v1/packs/\(pack.packID)/errors?limit=10")
            }
            Terminal.standardOutput(PackText.details(shown, failures: failures))
        }
    }
}

/// `packd wait ID`: follows a pack until it is complete (exit 0), fails or is deleted (exit 1).
struct WaitCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "wait",
        abstract: "Follow a pack until it is complete (exit 0), fails or is deleted (exit 1).",
        discussion: "A terminal gets a progress bar; anything else one JSON object per event, {\"event\", \"id\", \"data\"}. A suspended pack is waited for until it is resumed (use timeout(1) to bound the wait).")

    @OptionGroup var pack: PackReference

    func run() throws {
        let code = try ClientExit.run("wait") {
            try PackWait(client: try pack.connection.client(), packID: pack.packID, forPerson: pack.output.forPerson, command: "wait").run()
        }
        if code != ClientExit.success { throw ExitCode(code) }
    }
}

/// `packd suspend ID`.
struct SuspendCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "suspend", abstract: "Suspend a pack's download (it becomes inactive).")

    @OptionGroup var pack: PackReference

    func run() throws { try pack.changeState("suspend") }
}

/// `packd resume ID`.
struct ResumeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "resume", abstract: "Resume a pack (a failed one retries only what is missing).")

    @OptionGroup var pack: PackReference

    func run() throws { try pack.changeState("resume") }
}

/// `packd delete ID`: asks nothing, but from a terminal only with `--yes`.
struct DeleteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete", abstract: "Delete a pack (its resources no other pack uses become ambient cache).",
        discussion: "Typed at a terminal (standard input is one), it needs --yes; scripts need nothing.")

    @OptionGroup var connection: ServerConnectionOptions
    @Flag(help: "Delete without a second thought, also from a terminal.") var yes = false
    @Argument(help: "The pack's id.") var packID: Int64

    func run() throws {
        try connection.delete("/v1/packs/\(packID)", confirmed: yes, command: "delete", what: "pack \(packID)", done: "deleted")
    }
}

extension ServerConnectionOptions {
    /// `DELETE path` for a subcommand that removes something: typed at a terminal (standard input
    /// is one) only with `--yes` (`confirmed`); a terminal hears what was removed.
    func delete(_ path: String, confirmed: Bool, command: String, what: String, done: String) throws {
        guard confirmed || !Terminal.inputIsTerminal else {
            Terminal.standardError("packd \(command): \(what) is not \(done): from a terminal, confirm with --yes\n")
            throw ExitCode(ClientExit.usage)
        }
        try ClientExit.run(command) {
            let response = try client().send("DELETE", path)
            guard response.isSuccess else { throw ClientFailure.refusal(status: response.status, body: response.body) }
            if Terminal.outputIsTerminal { Terminal.standardOutput("\(done) \(what)\n") }
        }
    }
}

/// `packd list`: every pack in creation order, page after page.
struct ListCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the packs of a running packd in creation order.")

    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "Only packs in this state.") var state: PackState?
    @Option(help: "Only packs whose name contains this text.") var query: String?
    @Option(help: "Packs per request (1 to 500).") var pageSize = 100

    func validate() throws {
        guard (1...500).contains(pageSize) else { throw ValidationError("--page-size must be from 1 to 500") }
    }

    func run() throws {
        try ClientExit.run("list") {
            let client = try connection.client()
            var path = "/v1/packs?limit=\(pageSize)"
            if let state { path += "&state=\(state.rawValue)" }
            if let query { path += "&q=" + (query.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "") }
            var seen: Set<String> = []
            var first = true
            while seen.insert(path).inserted {
                let page = try client.get(PackList.self, path)
                if output.forPerson {
                    Terminal.standardOutput(PackText.rows(page.packs, header: first))
                } else {
                    page.packs.forEach(PackText.printJSON)
                }
                first = false
                // `next` is a path on the same server; anything else is not followed.
                guard let next = page.next, next.hasPrefix("/v1/packs?") else { break }
                path = next
            }
        }
    }
}
