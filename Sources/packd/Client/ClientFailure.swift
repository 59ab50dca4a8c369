import ArgumentParser
import Foundation
import Server

/// Why a client subcommand could not do what it was asked, and the exit code (sysexits, as
/// `serve` exits 64 for a bad setting) a script branches on. The API key never appears in one.
enum ClientFailure: Error, CustomStringConvertible {
    /// The server could not be reached (connection refused, DNS, TLS, a dropped connection).
    case unreachable(String)
    /// The server answered a non-2xx status; its problem+json when it sent one.
    case refused(status: Int, problem: Problem?)
    /// A local input is unusable: a flag's value, a file that cannot be read.
    case invalidInput(String)
    /// The server answered something that is not the documented JSON.
    case unexpected(String)

    /// 69 unreachable, 77 authentication or authorisation (401/403), 64 a request the server
    /// refused as given (400, 404, 409, 422, …) or a bad local input, 70 everything else.
    var exitCode: Int32 {
        switch self {
        case .unreachable: ClientExit.unavailable
        case .refused(let status, _) where status == 401 || status == 403: ClientExit.noPermission
        case .refused(let status, _) where (400..<500).contains(status): ClientExit.usage
        case .refused, .unexpected: ClientExit.software
        case .invalidInput: ClientExit.usage
        }
    }

    /// "422 Unprocessable Content: detail" and each field error on its own line with its
    /// pointer or parameter.
    var description: String {
        switch self {
        case .unreachable(let detail), .invalidInput(let detail), .unexpected(let detail): return detail
        case .refused(let status, nil): return "the server answered \(status)"
        case .refused(let status, let problem?):
            var message = "\(status) \(problem.title): \(problem.detail)"
            for item in problem.errors ?? [] {
                let location = item.pointer.map { $0.isEmpty ? "(body)" : $0 } ?? item.parameter ?? ""
                message += "\n  \(location.isEmpty ? "" : location + ": ")\(item.detail)"
            }
            return message
        }
    }

    /// A non-2xx answer: the problem+json body decoded when it is one.
    static func refusal(status: Int, body: Data) -> ClientFailure {
        .refused(status: status, problem: try? JSONDecoder().decode(Problem.self, from: body.prefix(1 << 20)))
    }
}

/// The exit codes of the client subcommands (sysexits.h).
enum ClientExit {
    /// The pack is complete (or the command did what it was asked).
    static let success: Int32 = 0
    /// The pack failed, or was deleted while `wait` followed it.
    static let packFailed: Int32 = 1
    /// EX_USAGE: a bad flag or argument, or a request the server refused as given.
    static let usage: Int32 = 64
    /// EX_SOFTWARE: the server failed (5xx) or answered something undocumented.
    static let software: Int32 = 70
    /// EX_UNAVAILABLE: the server could not be reached.
    static let unavailable: Int32 = 69
    /// EX_NOPERM: the server refused the API key (401) or its role (403).
    static let noPermission: Int32 = 77

    /// Runs a subcommand's body: a `ClientFailure` is printed as `packd <command>: <message>` on
    /// standard error and ends the process with its exit code.
    static func run<T>(_ command: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let failure as ClientFailure {
            Terminal.standardError("packd \(command): \(failure.description)\n")
            throw ExitCode(failure.exitCode)
        }
    }
}
