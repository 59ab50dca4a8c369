import ArgumentParser
import Foundation

/// `--server` and `--api-key-file` of every client subcommand, with `PACKD_SERVER` and
/// `PACKD_API_KEY` from the environment (the flag wins). There is deliberately no flag taking
/// the key itself: a command line lands in shell history and in `ps` for every local user.
struct ServerConnectionOptions: ParsableArguments {
    static let defaultServer = "http://127.0.0.1:8080"

    @Option(help: ArgumentHelp("The packd server's base URL (PACKD_SERVER; default \(Self.defaultServer)).", valueName: "url"))
    var server: String?

    @Option(help: ArgumentHelp("A file whose first line is an API key (or the key in PACKD_API_KEY); never printed.", valueName: "file"))
    var apiKeyFile: String?

    func client(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ClientFailure) -> ServerClient {
        let server = server ?? environment["PACKD_SERVER"].flatMap { $0.isEmpty ? nil : $0 } ?? Self.defaultServer
        return try ServerClient(server: server, apiKey: apiKey(environment: environment))
    }

    /// The key from `--api-key-file` (its first line, trimmed), else `PACKD_API_KEY`, else none;
    /// only visible ASCII, so it cannot end the `Authorization` header and start another.
    private func apiKey(environment: [String: String]) throws(ClientFailure) -> String? {
        let key = try configuredKey(environment: environment)
        guard let key, !key.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) else { return key }
        throw .invalidInput("the API key (\(apiKeyFile ?? "PACKD_API_KEY")) holds spaces, control or non-ASCII characters")
    }

    private func configuredKey(environment: [String: String]) throws(ClientFailure) -> String? {
        if let apiKeyFile {
            guard let handle = FileHandle(forReadingAtPath: apiKeyFile) else {
                throw .invalidInput("cannot read the API key file \(apiKeyFile)")
            }
            defer { try? handle.close() }
            // A key is a line; a file much larger than one is not a key file.
            let text = String(decoding: (try? handle.read(upToCount: 64 << 10)) ?? Data(), as: UTF8.self)
            let key = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard !key.isEmpty else { throw .invalidInput("the API key file \(apiKeyFile) is empty") }
            return key
        }
        let key = environment["PACKD_API_KEY"]?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return key.isEmpty ? nil : key
    }
}
