import Foundation
import Glibc
import PackdTestSupport
import Testing

/// The download settings of `packd serve` (flags and `PACKD_*`), and the upstream rules file:
/// a bad value is named (flag, variable, rule index and field), never echoes a secret, and
/// stops the process with 64 before it listens.
@Suite struct DownloadSettingsProcessTests {
    /// Runs `packd serve` to its exit; returns the status and standard error.
    /// `inspect` sees the work directory (the database in `db`) after the process ended.
    private static func run(_ arguments: [String], environment: [String: String] = [:], files: [String: Data] = [:],
                            inspect: (URL) throws -> Void = { _ in }) throws -> (status: Int32, stderr: String, directory: URL) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-dl-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (name, content) in files { try content.write(to: directory.appendingPathComponent(name)) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltExecutable.path("packd"))
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--database", directory.appendingPathComponent("db").path,
                             "--port-file", directory.appendingPathComponent("port").path] + arguments
        process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("PACKD_") }
            .merging(environment) { $1 }
        process.currentDirectoryURL = directory
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let portFile = directory.appendingPathComponent("port").path
        let deadline = Date().addingTimeInterval(60)
        while process.isRunning, !FileManager.default.fileExists(atPath: portFile), Date() < deadline { usleep(20_000) }
        // Started after all: a valid configuration. Stop it.
        if process.isRunning { kill(process.processIdentifier, SIGTERM) }
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        defer { try? FileManager.default.removeItem(at: directory) }
        try inspect(directory)
        return (process.terminationStatus, message, directory)
    }

    @Test(arguments: [
        (["--max-active-packs", "0"], [String: String](), "--max-active-packs"),
        ([], ["PACKD_MAX_TRANSFERS": "lots"], "PACKD_MAX_TRANSFERS"),
        (["--max-transfers", "4", "--max-transfers-per-host", "8"], [:], "--max-transfers-per-host"),
        (["--max-transfers-per-pack=0"], [:], "--max-transfers-per-pack"),
        (["--requests-per-second-per-host", "0"], [:], "--requests-per-second-per-host"),
        ([], ["PACKD_RETRY_ATTEMPTS": "1000"], "PACKD_RETRY_ATTEMPTS"),
        (["--retry-initial-backoff", "10s", "--retry-max-backoff", "1s"], [:], "--retry-max-backoff"),
        (["--max-failure-share", "1.5"], [:], "--max-failure-share"),
        (["--max-resource-bytes", "10"], [:], "--max-resource-bytes"),
        ([], ["PACKD_UPSTREAM_TIMEOUT": "forever"], "PACKD_UPSTREAM_TIMEOUT"),
        (["--upstream-connect-timeout=-1s"], [:], "--upstream-connect-timeout"),
        (["--upstream-stall-timeout", "2d"], [:], "--upstream-stall-timeout"),
        (["--upstream-rules-file", "/nonexistent/rules.json"], [:], "--upstream-rules-file"),
        (["--upstream-ca-file", "/nonexistent/ca.pem"], [:], "--upstream-ca-file"),
        ([], ["PACKD_UPSTREAM_CA_FILE": "/nonexistent/ca.pem"], "PACKD_UPSTREAM_CA_FILE"),
        (["--database-page-size", "3000"], [:], "--database-page-size"),
        ([], ["PACKD_DATABASE_PAGE_SIZE": "131072"], "PACKD_DATABASE_PAGE_SIZE"),
        (["--webhook-max-age", "30s"], [:], "--webhook-max-age"),
        ([], ["PACKD_WEBHOOK_MAX_AGE": "31d"], "PACKD_WEBHOOK_MAX_AGE"),
    ])
    func badDownloadSettingExitsWithUsageError(arguments: [String], environment: [String: String], named: String) throws {
        let result = try Self.run(arguments, environment: environment)
        #expect(result.status == 64)
        #expect(result.stderr.contains("invalid \(named):"), "\(result.stderr)")
    }

    static let secret = "s3cretV4lue9"

    /// Each bad rules file, and the words its message must contain (the rule index and field).
    @Test(arguments: [
        ("not json", "not a JSON document"),
        (#"[{"prefix": "http://a.example/", "query": {"k": "v"}}]"#, #"expected an object {"rules": [...]}"#),
        (#"{"rules": [], "extra": 1}"#, "unknown field 'extra'"),
        (#"{"rules": [{"prefix": "http://a.example/", "query": {"k": "SECRET"}}, {"prefix": "ftp://b.example/", "query": {"k": "v"}}]}"#,
         "rules[1].rewrite_prefix: a prefix that is not http(s) needs a rewrite_prefix"),
        (#"{"rules": [{"prefix": "mapbox://", "query": {"access_token": "SECRET"}}]}"#,
         "rules[0].rewrite_prefix: a prefix that is not http(s) needs a rewrite_prefix"),
        (#"{"rules": [{"prefix": "mapbox:styles/", "rewrite_prefix": "https://a.example/"}]}"#, "rules[0].prefix: expected an http://"),
        (#"{"rules": [{"prefix": "mapbox://", "rewrite_prefix": "maptiler://x/"}]}"#, "rules[0].rewrite_prefix: expected an http://"),
        (#"{"rules": [{"prefix": "http://u:p@a.example/", "query": {"k": "SECRET"}}]}"#, "rules[0].prefix: credentials"),
        (#"{"rules": [{"prefix": "http://a.example/", "headers": {"Bad Name": "SECRET"}}]}"#, "rules[0].headers"),
        (#"{"rules": [{"prefix": "http://a.example/", "headers": {"X-Key": "SECRET\r\nInjected: 1"}}]}"#,
         "rules[0].headers.X-Key: the value contains a control character"),
        (#"{"rules": [{"prefix": "http://a.example/", "headers": {"Host": "SECRET"}}]}"#, "rules[0].headers.Host"),
        (#"{"rules": [{"prefix": "http://a.example/", "query": {"key": 42}}]}"#, "rules[0].query.key: expected a string"),
        (#"{"rules": [{"prefix": "http://a.example/"}]}"#, "rules[0]: a rule needs headers, query, rewrite_prefix or a host policy"),
        (#"{"rules": [{"prefix": "http://a.example/", "query": {"k": "SECRET"}}, {"prefix": "http://a.example/", "headers": {"X": "SECRET"}}]}"#,
         "rules[1].prefix: the same prefix"),
        (#"{"rules": [{"prefix": "http://a.example/", "rewrite_prefix": "file:///etc/"}]}"#, "rules[0].rewrite_prefix"),
        (#"{"rules": [{"prefix": "http://a.example/", "token": "SECRET"}]}"#, "rules[0]: unknown field 'token'"),
        (#"{"rules": [{"prefix": "http://a.example/", "max_transfers": 0}]}"#,
         "rules[0].max_transfers: expected a whole number in 1...10000"),
        (#"{"rules": [{"prefix": "http://a.example/", "query": {"k": "SECRET"}}, {"prefix": "http://b.example/", "max_transfers": 2.5}]}"#,
         "rules[1].max_transfers: expected a whole number"),
        (#"{"rules": [{"prefix": "http://a.example/", "max_transfers": "2"}]}"#, "rules[0].max_transfers: expected a whole number"),
        (#"{"rules": [{"prefix": "http://a.example/", "max_transfers": true}]}"#, "rules[0].max_transfers: expected a whole number"),
        (#"{"rules": [{"prefix": "http://a.example/", "max_transfers": 600}]}"#,
         "rules[0].max_transfers: more than the 512 transfers allowed overall (--max-transfers)"),
        (#"{"rules": [{"prefix": "http://a.example/", "requests_per_second": -1}]}"#,
         "rules[0].requests_per_second: expected a number in 0.001...100000"),
        (#"{"rules": [{"prefix": "http://a.example/", "adaptive": 0}]}"#, "rules[0].adaptive: expected true or false"),
        (#"{"rules": [{"prefix": "https://a.example/", "http2_prior_knowledge": true}]}"#,
         "rules[0].http2_prior_knowledge: only for an http:// upstream"),
    ])
    func badRulesFileIsNamedPreciselyWithoutItsSecrets(file: String, words: String) throws {
        let result = try Self.run(["--upstream-rules-file", "rules.json"],
                                  files: ["rules.json": Data(file.replacingOccurrences(of: "SECRET", with: Self.secret).utf8)])
        #expect(result.status == 64)
        #expect(result.stderr.contains("invalid --upstream-rules-file: \(words)"), "\(result.stderr)")
        #expect(!result.stderr.contains(Self.secret))
    }

    @Test func oversizedRulesFileIsRefusedUnread() throws {
        let padding = String(repeating: " ", count: 1 << 20)
        let file = #"{"rules": [{"prefix": "http://a.example/", "query": {"k": "v"}}]}"# + padding
        let result = try Self.run([], environment: ["PACKD_UPSTREAM_RULES_FILE": "rules.json"],
                                  files: ["rules.json": Data(file.utf8)])
        #expect(result.status == 64)
        #expect(result.stderr.contains("invalid PACKD_UPSTREAM_RULES_FILE: rules.json is larger than 1048576 bytes"),
                "\(result.stderr)")
    }

    /// A CA file that is not PEM certificates is refused at start-up, naming what is wrong.
    @Test(arguments: [
        ("", "holds no PEM certificate"),
        ("-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n", "holds no PEM certificate"),
        ("-----BEGIN CERTIFICATE-----\nnot base64 at all!\n-----END CERTIFICATE-----\n", "certificate 1 is not a base64-encoded DER certificate"),
        ("-----BEGIN CERTIFICATE-----\nMIIB\n", "certificate 1 has no -----END CERTIFICATE----- line"),
    ])
    func badCAFileIsRefusedWithWhatIsWrong(content: String, words: String) throws {
        let result = try Self.run(["--upstream-ca-file", "ca.pem"], files: ["ca.pem": Data(content.utf8)])
        #expect(result.status == 64)
        #expect(result.stderr.contains("invalid --upstream-ca-file: ca.pem") && result.stderr.contains(words),
                "\(result.stderr)")
    }

    /// A real CA certificate and per-host rules are accepted.
    @Test func caFileAndHostPoliciesStartTheServer() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-ca-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let authority = try TestCertificateAuthority(directory: directory)
        let rules = #"{"rules": [{"prefix": "https://tile.openstreetmap.org/", "max_transfers": 2, "adaptive": false,"# +
            #" "requests_per_second": 20}, {"prefix": "https://tiles.example.com/", "max_transfers": 512},"# +
            #" {"prefix": "http://tiles.internal:8080/", "http2_prior_knowledge": true}]}"#
        let result = try Self.run(["--upstream-ca-file", authority.certificatePath, "--upstream-rules-file", "rules.json"],
                                  files: ["rules.json": Data(rules.utf8)])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// Valid settings start the server (exit 0 on SIGTERM), and a flag wins over a bad variable.
    @Test func validSettingsStartAndTheFlagWins() throws {
        let rules = #"{"rules": [{"prefix": "https://tiles.example/", "headers": {"Authorization": "Bearer x1"},"# +
            #" "query": {"key": "abc"}, "rewrite_prefix": "http://mirror.example:8080/"},"# +
            #" {"prefix": "mapbox://", "query": {"access_token": "pk.x"}, "rewrite_prefix": "https://api.mapbox.example/"}]}"#
        let result = try Self.run(["--max-active-packs", "3", "--max-transfers", "8", "--max-transfers-per-host", "4",
                                   "--requests-per-second-per-host", "2.5", "--retry-attempts", "3",
                                   "--retry-initial-backoff", "50ms", "--retry-max-backoff", "2s",
                                   "--max-failure-share", "0", "--max-resource-bytes", "1048576",
                                   "--upstream-connect-timeout", "2s", "--upstream-stall-timeout", "5s",
                                   "--upstream-timeout", "1m", "--upstream-rules-file", "rules.json", "--webhook-max-age", "12h"],
                                  environment: ["PACKD_MAX_ACTIVE_PACKS": "many"],
                                  files: ["rules.json": Data(rules.utf8)])
        #expect(result.status == 0, "\(result.stderr)")
    }

    /// A database packd creates gets 16 KiB pages, or those `--database-page-size` names; the size
    /// is in the file's header (bytes 16–17, big-endian).
    @Test(arguments: [([String](), 16384), (["--database-page-size", "4096"], 4096), (["--database-page-size=65536"], 1)])
    func aNewDatabaseHasTheConfiguredPageSize(arguments: [String], header: Int) throws {
        var found: Int?
        let result = try Self.run(arguments) { directory in
            let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent("db")).prefix(18))
            found = bytes.count == 18 ? Int(bytes[16]) << 8 | Int(bytes[17]) : nil
        }
        #expect(result.status == 0, "\(result.stderr)")
        #expect(found == header, "SQLite writes 65536 as 1")
    }

    @Test func helpListsEveryDownloadSetting() throws {
        let help = try PackdCommand.run(["serve", "--help"]).stdout
        for name in ["max-active-packs", "max-transfers", "max-transfers-per-host", "max-transfers-per-pack",
                     "requests-per-second-per-host", "retry-attempts", "retry-initial-backoff", "retry-max-backoff",
                     "max-failure-share", "max-resource-bytes", "upstream-connect-timeout", "upstream-stall-timeout",
                     "upstream-timeout", "upstream-rules-file", "upstream-ca-file"] {
            #expect(help.contains("--\(name)"), "\(name)")
            #expect(help.contains("PACKD_\(name.uppercased().replacingOccurrences(of: "-", with: "_"))"), "\(name)")
        }
    }
}
