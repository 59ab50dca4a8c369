import Foundation
import Glibc

/// The process's standard streams as the client subcommands use them: whether a person is
/// watching (a terminal gets text and a progress bar, anything else JSON lines), the terminal's
/// width, and unbuffered writes so a pipe sees each line as it happens.
enum Terminal {
    /// Whether standard output is a terminal.
    static var outputIsTerminal: Bool { isatty(STDOUT_FILENO) == 1 }

    /// Whether standard input is a terminal (a person typing, not a script).
    static var inputIsTerminal: Bool { isatty(STDIN_FILENO) == 1 }

    /// Columns of the terminal on standard output; 80 when unknown.
    static var columns: Int {
        var size = winsize()
        guard ioctl(STDOUT_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 else { return 80 }
        return Int(size.ws_col)
    }

    /// Whether the locale can show block characters (UTF-8); otherwise the bar is ASCII.
    static var isUTF8: Bool {
        let environment = ProcessInfo.processInfo.environment
        let locale = environment["LC_ALL"].flatMap { $0.isEmpty ? nil : $0 } ?? environment["LC_CTYPE"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["LANG"] ?? ""
        return locale.uppercased().replacingOccurrences(of: "-", with: "").contains("UTF8")
    }

    static func standardOutput(_ text: String) {
        write(Array(text.utf8), to: STDOUT_FILENO)
    }

    static func standardOutput(line bytes: [UInt8]) {
        write(bytes + [0x0A], to: STDOUT_FILENO)
    }

    static func standardError(_ text: String) {
        write(Array(text.utf8), to: STDERR_FILENO)
    }

    /// The whole buffer, retrying short writes and EINTR. A reader that went away (`| head`)
    /// ends the process with SIGPIPE, as for any command-line tool.
    private static func write(_ bytes: [UInt8], to descriptor: Int32) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }
}
