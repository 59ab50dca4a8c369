import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The standard `process_*` metrics of Prometheus' client libraries (resident and virtual
/// memory, CPU seconds, open and maximum file descriptors, start time), read from `/proc/self`
/// when `/metrics` is scraped. procfs reads are answered from kernel memory, never the disk, so
/// this is safe on the loop thread; it costs one small read per file and a directory listing of
/// the open descriptors. Where `/proc` is missing (macOS) the samples are left out.
struct ProcessMetrics: Sendable {
    struct Sample: Equatable {
        var cpuSeconds: Double
        var residentBytes: Int
        var virtualBytes: Int
        var openDescriptors: Int?
        var maximumDescriptors: Int?
        var startTime: Double
    }

    /// Seconds since the epoch at which this process started; computed once.
    let startTime: Double?

    init() {
        startTime = Self.readStat().flatMap { stat in
            Self.bootTime().map { $0 + Double(stat.startTicks) / Double(Self.ticksPerSecond) }
        }
    }

    func sample() -> Sample? {
        guard let stat = Self.readStat(), let startTime else { return nil }
        return Sample(
            cpuSeconds: Double(stat.userTicks + stat.systemTicks) / Double(Self.ticksPerSecond),
            residentBytes: stat.residentPages * Self.pageSize,
            virtualBytes: stat.virtualBytes,
            openDescriptors: Self.openDescriptors(),
            maximumDescriptors: Self.maximumDescriptors(),
            startTime: startTime
        )
    }

    /// The samples in the text exposition format, `# HELP` and `# TYPE` included.
    func exposition() -> String {
        guard let sample = sample() else { return "" }
        var out = ""
        func family(_ name: String, _ type: String, _ help: String, _ value: String) {
            out += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n\(name) \(value)\n"
        }
        family("process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.", "\(sample.cpuSeconds)")
        family("process_resident_memory_bytes", "gauge", "Resident memory size in bytes.", "\(sample.residentBytes)")
        family("process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.", "\(sample.virtualBytes)")
        if let open = sample.openDescriptors {
            family("process_open_fds", "gauge", "Number of open file descriptors.", "\(open)")
        }
        if let maximum = sample.maximumDescriptors {
            family("process_max_fds", "gauge", "Maximum number of open file descriptors.", "\(maximum)")
        }
        family("process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.", "\(sample.startTime)")
        return out
    }

    // MARK: /proc

    private struct Stat {
        var userTicks: Int
        var systemTicks: Int
        var startTicks: Int
        var virtualBytes: Int
        var residentPages: Int
    }

    private static let ticksPerSecond = systemValue(Int32(_SC_CLK_TCK), otherwise: 100)
    private static let pageSize = systemValue(Int32(_SC_PAGESIZE), otherwise: 4096)

    private static func systemValue(_ name: Int32, otherwise fallback: Int) -> Int {
        #if canImport(Glibc)
        let value = sysconf(name)
        return value > 0 ? value : fallback
        #else
        return fallback
        #endif
    }

    /// `/proc/self/stat` (proc(5)): the fields after the command name, which is in parentheses
    /// and may itself contain spaces and parentheses, hence the split at the last `)`.
    private static func readStat() -> Stat? {
        guard let text = read("/proc/self/stat", limit: 64 << 10), let close = text.lastIndex(of: ")") else { return nil }
        let fields = text[text.index(after: close)...].split(separator: " ", omittingEmptySubsequences: true)
        // fields[0] is field 3 (state): field n is fields[n - 3].
        guard fields.count > 21,
              let user = Int(fields[11]), let system = Int(fields[12]), let start = Int(fields[19]),
              let virtual = Int(fields[20]), let resident = Int(fields[21]) else { return nil }
        return Stat(userTicks: user, systemTicks: system, startTicks: start, virtualBytes: virtual, residentPages: resident)
    }

    /// `btime` of `/proc/stat`: the boot time in seconds since the epoch.
    private static func bootTime() -> Double? {
        // The `intr` line before `btime` grows with the interrupt count: allow a large file.
        guard let text = read("/proc/stat", limit: 4 << 20) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }

    /// Entries of `/proc/self/fd`, less the descriptor the listing itself holds.
    private static func openDescriptors() -> Int? {
        #if canImport(Glibc)
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        var count = 0
        while let entry = readdir(directory) {
            let isDot = withUnsafeBytes(of: entry.pointee.d_name) { name in name[0] == UInt8(ascii: ".") }
            if !isDot { count += 1 }
        }
        return max(0, count - 1)
        #else
        return nil
        #endif
    }

    private static func maximumDescriptors() -> Int? {
        #if canImport(Glibc)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < rlim_t(Int.max) else { return nil }
        return Int(limit.rlim_cur)
        #else
        return nil
        #endif
    }

    /// A whole procfs file (their reported size is 0, so read until the end), at most `limit` bytes.
    private static func read(_ path: String, limit: Int) -> String? {
        #if canImport(Glibc)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count < limit {
            let count = chunk.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
        }
        return String(decoding: bytes, as: UTF8.self)
        #else
        return nil
        #endif
    }
}
