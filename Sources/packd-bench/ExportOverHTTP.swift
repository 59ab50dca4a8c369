import Foundation
import Glibc
import Store

/// `packd-bench export --http`: the same pack exported through a release `packd serve`
/// (`GET /v1/packs/1/export?format=…`, read to the end by a socket client), timed beside the
/// Store-level export of the same format measured earlier in the same run, with the server's
/// anonymous-memory peak sampled from /proc while it builds and streams.
struct ExportOverHTTP {
    struct Result {
        let format: String
        let seconds: Double
        /// CPU the server spent (user + system), the share of the wall time that is packd's own
        /// on a loaded machine.
        let serverCPUSeconds: Double
        let bytes: Int
        let anonymousPeakKB: Int
        let anonymousBeforeKB: Int
    }

    let databasePath: String
    let directory: String

    func run(formats: [String]) throws -> [Result] {
        let portFile = directory + "/packd.port"
        try? FileManager.default.removeItem(atPath: portFile)
        let process = Process()
        let binDirectory = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        process.executableURL = binDirectory.appendingPathComponent("packd")
        process.arguments = ["serve", "--listen", "127.0.0.1:0", "--port-file", portFile, "--database", databasePath,
                             "--log-level", "warning"]
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        defer {
            kill(process.processIdentifier, SIGTERM)
            process.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(30)
        var port: Int?
        while port == nil, Date() < deadline, process.isRunning {
            port = (try? String(contentsOfFile: portFile, encoding: .utf8)).flatMap { Int($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            if port == nil { usleep(20_000) }
        }
        guard let port else { throw BenchFailure("packd did not start (build it next to packd-bench: swift build -c release)") }
        let pid = process.processIdentifier
        return try formats.map { format in
            let before = PeakMemory.kilobytes("RssAnon:", pid: pid)
            let sampler = AnonymousMemorySampler(pid: pid)
            let cpuBefore = Self.cpuSeconds(pid: pid)
            let start = DispatchTime.now().uptimeNanoseconds
            let bytes = try Self.download(port: port, target: "/v1/packs/1/export?format=\(format)")
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            return Result(format: format, seconds: seconds, serverCPUSeconds: Self.cpuSeconds(pid: pid) - cpuBefore, bytes: bytes, anonymousPeakKB: sampler.stop(), anonymousBeforeKB: before)
        }
    }

    /// utime + stime of `pid` from /proc/PID/stat (fields 14 and 15, in clock ticks).
    static func cpuSeconds(pid: Int32) -> Double {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// GETs `target` and reads the answer to the end (Connection: close); returns the body size.
    static func download(port: Int, target: String) throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw BenchFailure("socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw BenchFailure("connect failed") }
        let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(fd, $0.baseAddress, $0.count, 0) }) == request.count else { throw BenchFailure("send failed") }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var head: [UInt8] = []
        var total = 0
        var headEnd: Int?
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            total += count
            if headEnd == nil {
                head += buffer[..<min(count, 4096)]
                if let end = (0..<max(0, head.count - 3)).first(where: { head[$0] == 13 && head[$0 + 1] == 10 && head[$0 + 2] == 13 && head[$0 + 3] == 10 }) {
                    headEnd = end + 4
                }
            }
        }
        guard let headEnd, String(decoding: head.prefix(12), as: UTF8.self).hasSuffix("200") else {
            throw BenchFailure("\(target): \(String(decoding: head.prefix(300), as: UTF8.self))")
        }
        return total - headEnd
    }

}

struct BenchFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
