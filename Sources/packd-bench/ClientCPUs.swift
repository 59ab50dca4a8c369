import Foundation

/// The CPUs the benchmark's clients (packd, curl, mapproxy-seed) run on, when set
/// (`--client-cpus`): started through `taskset`, which execs them, so their process ids and
/// signals are theirs. With the benchmark itself under `taskset -c` on the other CPUs, the
/// upstream it simulates (its delaying server and nginx, which inherit its CPUs) no longer shares
/// the clients' cores — as a tile server far away would not.
enum ClientCPUs {
    nonisolated(unsafe) static var list: String?

    static func launch(_ process: Process, _ executable: URL, _ arguments: [String]) {
        if let list {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/taskset")
            process.arguments = ["--cpu-list", list, executable.path] + arguments
        } else {
            process.executableURL = executable
            process.arguments = arguments
        }
    }
}
