import Foundation
import Glibc

/// CPU time of processes from `/proc/PID/stat`, in seconds.
enum ProcessCPU {
    /// User plus system time of `pid` so far; with `reapedChildren`, also that of its children
    /// that exited and were waited for. nil once the process is gone.
    static func seconds(_ pid: Int32, reapedChildren: Bool = false) -> Double? {
        seconds(pid, fields: [11, 12] + (reapedChildren ? [13, 14] : []))
    }

    /// User plus system time of this process's children that exited and were waited for.
    static func reapedChildrenSeconds() -> Double {
        seconds(getpid(), fields: [13, 14]) ?? 0
    }

    /// The sum of the clock-tick fields `used` of `/proc/PID/stat`, in seconds. After the command
    /// name: state is field 3, ppid 4, utime 14, stime 15, cutime 16, cstime 17.
    private static func seconds(_ pid: Int32, fields used: [Int]) -> Double? {
        guard let fields = statFields(pid), fields.count > 14 else { return nil }
        let ticks = used.compactMap { Double(fields[$0]) }.reduce(0, +)
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A PostgreSQL server's CPU so far: the postmaster (its `postmaster.pid` in `dataDirectory`),
    /// its live backends and helpers, and those that exited.
    static func postgresSeconds(dataDirectory: String) -> Double {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let line = text.split(separator: "\n").first, let postmaster = Int32(line) else { return 0 }
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []).compactMap(Int32.init)
            .filter { statFields($0).map { $0.count > 1 && $0[1] == String(postmaster) } ?? false }
        return (seconds(postmaster, reapedChildren: true) ?? 0) + children.compactMap { seconds($0) }.reduce(0, +)
    }

    /// The fields of `/proc/PID/stat` after the command name (which may hold spaces).
    private static func statFields(_ pid: Int32) -> [Substring]? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        return stat[stat.index(after: close)...].split(separator: " ")
    }
}
