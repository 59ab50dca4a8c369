import Foundation
import Glibc

/// A throw-away certificate authority and a server certificate for 127.0.0.1/localhost it
/// signed, made with the `openssl` command line in `directory` (for upstreams behind a private
/// CA: tests and the WAN benchmark).
public struct TestCertificateAuthority: Sendable {
    /// The CA certificate (PEM): what `--upstream-ca-file` is given.
    public let certificatePath: String
    /// The server's certificate and key (PEM).
    public let serverCertificatePath: String
    public let serverKeyPath: String

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(directory: URL) throws {
        let path = directory.path
        certificatePath = "\(path)/ca.pem"
        serverCertificatePath = "\(path)/server.pem"
        serverKeyPath = "\(path)/server.key"
        try Data("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n".utf8)
            .write(to: directory.appendingPathComponent("server.ext"))
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try Self.openssl(["req", "-x509"] + curve + ["-keyout", "\(path)/ca.key", "-out", certificatePath, "-days", "2",
                          "-subj", "/CN=packd test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                          "-addext", "keyUsage=critical,keyCertSign"])
        try Self.openssl(["req"] + curve + ["-keyout", serverKeyPath, "-out", "\(path)/server.csr", "-subj", "/CN=127.0.0.1"])
        try Self.openssl(["x509", "-req", "-in", "\(path)/server.csr", "-CA", certificatePath, "-CAkey", "\(path)/ca.key",
                          "-CAcreateserial", "-out", serverCertificatePath, "-days", "2", "-extfile", "\(path)/server.ext"])
    }

    private static func openssl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        let errors = Pipe()
        process.standardError = errors
        try process.run()
        let message = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl \(arguments[0]) failed: \(String(decoding: message, as: UTF8.self))")
        }
    }
}

/// `openssl s_server -WWW` on an ephemeral 127.0.0.1 port: an HTTPS upstream serving the files
/// of `directory` with a certificate of `authority` (HTTP/1.0 answers, one connection each).
public final class TLSFileServer: @unchecked Sendable {
    public let port: Int
    private let process: Process

    public init(directory: URL, authority: TestCertificateAuthority) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        process.arguments = ["s_server", "-accept", "127.0.0.1:0", "-cert", authority.serverCertificatePath,
                             "-key", authority.serverKeyPath, "-WWW"]
        process.currentDirectoryURL = directory
        // It prints `ACCEPT 127.0.0.1:PORT` once listening, then a line per request: to a file,
        // which no unread pipe can fill up.
        let log = directory.appendingPathComponent("s_server.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        process.standardOutput = try FileHandle(forWritingTo: log)
        process.standardError = FileHandle.nullDevice
        try process.run()
        self.process = process
        var port: Int?
        _ = eventually(within: 30) {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: "ACCEPT 127.0.0.1:") {
                port = Int(text[range.upperBound...].prefix { $0.isNumber })
            }
            return port != nil || !process.isRunning
        }
        guard let port else {
            kill(process.processIdentifier, SIGKILL)
            throw TestCertificateAuthority.Failure(description: "openssl s_server did not start")
        }
        self.port = port
    }

    public func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    /// SIGKILL: the test process may run with SIGTERM blocked, which its children inherit.
    public func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}
