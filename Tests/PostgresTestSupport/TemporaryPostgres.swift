import Foundation
import Glibc
import Postgres

/// A real PostgreSQL server for tests and benchmarks: `initdb` into a fresh temporary directory,
/// `pg_ctl start` listening on a Unix socket in that directory (and, when asked, on an ephemeral
/// 127.0.0.1 port), stopped and deleted by `stop()` or at process exit. Never a mock.
///
/// `initdb` takes seconds, so a test process shares one server (`shared`) and gives each test a
/// database of its own (`makeDatabase()`).
///
/// PostgreSQL refuses to run as root. Run by root (as in CI containers), the server's files and
/// processes belong to the unprivileged user `packd-postgres`, created when missing, and its
/// commands run through `setpriv`; run by anyone else, they run as that user.
public final class TemporaryPostgres: @unchecked Sendable {
    public struct Options: Sendable {
        /// Also listen on 127.0.0.1 on a free port (`tcpURL`).
        public var tcp: Bool
        /// Keep fsync and synchronous commit on, as production runs (benchmarks); tests turn
        /// durability off, which changes nothing they check and saves seconds.
        public var durable: Bool
        public var maximumConnections: Int

        public init(tcp: Bool = false, durable: Bool = false, maximumConnections: Int = 200) {
            self.tcp = tcp
            self.durable = durable
            self.maximumConnections = maximumConnections
        }
    }

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// The temporary directory: data in `data/`, the socket `.s.PGSQL.<port>`, the log `server.log`.
    public let directory: String
    public let port: Int
    /// The superuser's URL for the `postgres` database over the Unix socket.
    public let url: PostgresURL
    /// The same over TCP on 127.0.0.1, when started with `tcp`.
    public let tcpURL: PostgresURL?
    public static let superuser = "packd"

    private let binaries: String
    private let account: ServerAccount
    private let lock = NSLock()
    private var stopped = false
    private var databases = 0
    private var maintenance: PostgresConnection?

    /// The server of this test process, started on first use and stopped at exit.
    public static func shared() throws -> TemporaryPostgres {
        try sharedServer.get()
    }

    private static let sharedServer = Result { try TemporaryPostgres.start() }

    /// Starts a new server (seconds: initdb). Call `stop()` when done; exit stops it otherwise.
    public static func start(_ options: Options = Options()) throws -> TemporaryPostgres {
        let binaries = try Self.binaryDirectory()
        let account = try ServerAccount.current()
        Self.removeAbandonedServers(binaries: binaries, account: account)

        var template = Array("/tmp/packd-postgres-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw Failure(description: "mkdtemp: \(String(cString: strerror(errno)))") }
        let directory = String(cString: made)
        do {
            try "\(getpid())\n".write(toFile: directory + "/owner.pid", atomically: false, encoding: .utf8)
            try account.own(directory)
            let data = directory + "/data"
            try account.run(binaries + "/initdb", ["-D", data, "-U", superuser, "-A", "trust", "-E", "UTF8",
                                                   "--locale=C", "--no-sync", "--no-instructions"])
            let configuration = data + "/postgresql.conf"
            let include = "\ninclude_if_exists = 'packd-test.conf'\n"
            guard let handle = FileHandle(forWritingAtPath: configuration) else {
                throw Failure(description: "cannot open \(configuration)")
            }
            handle.seekToEndOfFile()
            handle.write(Data(include.utf8))
            handle.closeFile()

            // An ephemeral port is found by binding port 0; another process may take it before
            // the server binds it, so a refused start is retried with a new one.
            var attempt = 0
            while true {
                attempt += 1
                let port = options.tcp ? try Self.freeLoopbackPort() : 5432
                try Self.settings(options: options, port: port, directory: directory)
                    .write(toFile: data + "/packd-test.conf", atomically: false, encoding: .utf8)
                try account.own(data + "/packd-test.conf")
                do {
                    try account.run(binaries + "/pg_ctl", ["start", "-w", "-t", "120", "-D", data, "-l", directory + "/server.log"])
                } catch {
                    let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
                    if options.tcp, attempt < 5, log.contains("could not bind") || log.contains("Address already in use") {
                        continue
                    }
                    throw Failure(description: "\(error)\n\(log.suffix(2000))")
                }
                let server = try TemporaryPostgres(directory: directory, port: port, tcp: options.tcp,
                                                   binaries: binaries, account: account)
                Self.register(server)
                return server
            }
        } catch {
            try? account.run(binaries + "/pg_ctl", ["stop", "-D", directory + "/data", "-m", "immediate"])
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    private init(directory: String, port: Int, tcp: Bool, binaries: String, account: ServerAccount) throws {
        self.directory = directory
        self.port = port
        self.binaries = binaries
        self.account = account
        let socketHost = directory.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? directory
        url = try PostgresURL("postgresql://\(Self.superuser)@\(socketHost):\(port)/postgres")
        tcpURL = tcp ? try PostgresURL("postgresql://\(Self.superuser)@127.0.0.1:\(port)/postgres") : nil
    }

    private static func settings(options: Options, port: Int, directory: String) -> String {
        var lines = [
            "port = \(port)",
            "unix_socket_directories = '\(directory)'",
            "listen_addresses = '\(options.tcp ? "127.0.0.1" : "")'",
            "max_connections = \(options.maximumConnections)",
            "log_min_messages = warning",
            "log_min_error_statement = panic",
        ]
        if !options.durable {
            lines += ["fsync = off", "synchronous_commit = off", "full_page_writes = off"]
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Stops the server and deletes its directory. Idempotent.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { return }
        stopped = true
        maintenance = nil
        try? account.run(binaries + "/pg_ctl", ["stop", "-D", directory + "/data", "-m", "immediate", "-w"])
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Stops the server as a crash would (`immediate`: no checkpoint, every session cut off) and
    /// starts it again on the same data and port; returns once it accepts connections.
    public func restart() throws {
        lock.lock()
        defer { lock.unlock() }
        guard !stopped else { throw Failure(description: "the server was stopped") }
        maintenance = nil
        let data = directory + "/data"
        try account.run(binaries + "/pg_ctl", ["stop", "-D", data, "-m", "immediate", "-w"])
        try account.run(binaries + "/pg_ctl", ["start", "-w", "-t", "120", "-D", data, "-l", directory + "/server.log"])
    }

    // MARK: Databases

    /// A new, empty database on this server; its URL (Unix socket, or TCP when `overTCP`).
    public func makeDatabase(prefix: String = "test", overTCP: Bool = false) throws -> PostgresURL {
        lock.lock()
        defer { lock.unlock() }
        databases += 1
        let name = "\(prefix)_\(getpid())_\(databases)"
        try maintenanceConnection().execute("CREATE DATABASE \(name) TEMPLATE template0")
        return (overTCP ? tcpURL ?? url : url).with(database: name)
    }

    /// Drops a database made by `makeDatabase`, ending its sessions.
    public func dropDatabase(_ url: PostgresURL) throws {
        guard let name = url.database else { return }
        lock.lock()
        defer { lock.unlock() }
        let connection = try maintenanceConnection()
        try connection.execute("DROP DATABASE IF EXISTS \(try connection.quotedIdentifier(name)) WITH (FORCE)")
    }

    private func maintenanceConnection() throws -> PostgresConnection {
        if let maintenance, maintenance.isUsable { return maintenance }
        let connection = try PostgresConnection(url: url, applicationName: "packd-test-maintenance")
        maintenance = connection
        return connection
    }

    // MARK: Process-wide bookkeeping

    nonisolated(unsafe) private static var running: [TemporaryPostgres] = []
    private static let runningLock = NSLock()

    private static func register(_ server: TemporaryPostgres) {
        runningLock.lock()
        defer { runningLock.unlock() }
        if running.isEmpty { atexit { TemporaryPostgres.stopAll() } }
        running.append(server)
    }

    private static func stopAll() {
        runningLock.lock()
        let servers = running
        running.removeAll()
        runningLock.unlock()
        for server in servers { server.stop() }
    }

    /// Stops and deletes servers whose test process died without stopping them (SIGKILL, a
    /// crash): their directory names an owner process that no longer exists.
    private static func removeAbandonedServers(binaries: String, account: ServerAccount) {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: "/tmp") else { return }
        for entry in entries where entry.hasPrefix("packd-postgres-") {
            let directory = "/tmp/" + entry
            guard let text = try? String(contentsOfFile: directory + "/owner.pid", encoding: .utf8),
                  let owner = Int32(text.trimmingCharacters(in: .whitespacesAndNewlines)),
                  kill(owner, 0) != 0, errno == ESRCH
            else { continue }
            try? account.run(binaries + "/pg_ctl", ["stop", "-D", directory + "/data", "-m", "immediate", "-w"])
            try? FileManager.default.removeItem(atPath: directory)
        }
    }

    // MARK: Finding the binaries

    /// `PACKD_POSTGRES_BIN`, else the newest `/usr/lib/postgresql/<version>/bin` (Debian), else
    /// the directory of `initdb` on `PATH`.
    static func binaryDirectory() throws -> String {
        let files = FileManager.default
        if let configured = ProcessInfo.processInfo.environment["PACKD_POSTGRES_BIN"], !configured.isEmpty {
            guard files.isExecutableFile(atPath: configured + "/initdb") else {
                throw Failure(description: "PACKD_POSTGRES_BIN=\(configured) has no initdb")
            }
            return configured
        }
        let versions = ((try? files.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where files.isExecutableFile(atPath: "/usr/lib/postgresql/\(version)/bin/initdb") {
            return "/usr/lib/postgresql/\(version)/bin"
        }
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        where files.isExecutableFile(atPath: "\(directory)/initdb") && files.isExecutableFile(atPath: "\(directory)/pg_ctl") {
            return String(directory)
        }
        throw Failure(description: "PostgreSQL server binaries (initdb, pg_ctl) not found: install Debian's "
            + "`postgresql` (make deps does) or set PACKD_POSTGRES_BIN")
    }

    private static func freeLoopbackPort() throws -> Int {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
            }
        }
        guard bound else { throw Failure(description: "bind 127.0.0.1:0: \(String(cString: strerror(errno)))") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Who the server runs as: the calling user, or — for root, whom PostgreSQL refuses — the
/// unprivileged `packd-postgres`, its commands run through `setpriv`.
struct ServerAccount: Sendable {
    static let dedicatedUser = "packd-postgres"
    /// nil: the calling user.
    let identity: (user: uid_t, group: gid_t)?

    /// Decided once per process: tests starting servers at once must not race `useradd`.
    static func current() throws -> ServerAccount {
        try decided.get()
    }

    private static let decided = Result { try decide() }

    private static func decide() throws -> ServerAccount {
        guard geteuid() == 0 else { return ServerAccount(identity: nil) }
        var output = ""
        // Another test process may be creating it at the same moment: useradd then fails (the
        // user exists, or /etc/passwd is locked) and the next look finds it.
        for _ in 0..<5 {
            if let identity = lookup() { return ServerAccount(identity: identity) }
            output = try runCommand("/usr/sbin/useradd", ["--system", "--user-group", "--no-create-home",
                                                          "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                                                          dedicatedUser], check: false).output
        }
        throw TemporaryPostgres.Failure(description: "could not create user \(dedicatedUser) (useradd: \(output))")
    }

    private static func lookup() -> (user: uid_t, group: gid_t)? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getpwnam_r(dedicatedUser, &entry, &buffer, buffer.count, &found) == 0, found != nil else { return nil }
        return (entry.pw_uid, entry.pw_gid)
    }

    /// Gives `path` to the server's user (a no-op for the calling user).
    func own(_ path: String) throws {
        guard let identity else { return }
        guard chown(path, identity.user, identity.group) == 0 else {
            throw TemporaryPostgres.Failure(description: "chown \(path): \(String(cString: strerror(errno)))")
        }
    }

    /// Runs `executable` as the server's user; throws with its output when it fails.
    func run(_ executable: String, _ arguments: [String]) throws {
        if let identity {
            try runCommand("/usr/bin/setpriv", ["--reuid=\(identity.user)", "--regid=\(identity.group)", "--clear-groups",
                                                "--reset-env", executable] + arguments)
        } else {
            try runCommand(executable, arguments)
        }
    }
}

/// Runs a command to completion with `posix_spawn` and `waitpid`, its output (stdout and stderr)
/// collected through a file. Not Foundation's `Process`: waiting on `pg_ctl` through it hangs in a
/// test process (the exited child is never reaped), and it lets every descriptor of the test
/// process — other tests' sockets — leak into the daemon `pg_ctl` leaves behind. Here every
/// descriptor above stderr is closed in the child.
@discardableResult
func runCommand(_ executable: String, _ arguments: [String], check: Bool = true) throws -> (status: Int32, output: String) {
    var template = Array("/tmp/packd-command-XXXXXX".utf8CString)
    let outputDescriptor = mkstemp(&template)
    guard outputDescriptor >= 0 else { throw TemporaryPostgres.Failure(description: "mkstemp: \(String(cString: strerror(errno)))") }
    let outputPath = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    defer {
        close(outputDescriptor)
        unlink(outputPath)
    }
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
    posix_spawn_file_actions_adddup2(&actions, outputDescriptor, 1)
    posix_spawn_file_actions_adddup2(&actions, outputDescriptor, 2)
    closeInheritedDescriptors(&actions)

    let argv = ([executable] + arguments).map { strdup($0) } + [nil]
    defer { argv.forEach { free($0) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
    guard spawned == 0 else {
        throw TemporaryPostgres.Failure(description: "cannot run \(executable): \(String(cString: strerror(spawned)))")
    }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 {
        guard errno == EINTR else { throw TemporaryPostgres.Failure(description: "waitpid: \(String(cString: strerror(errno)))") }
    }
    // WIFEXITED / WEXITSTATUS, which Swift does not import (macros).
    let exitStatus: Int32 = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
    if check, exitStatus != 0 {
        throw TemporaryPostgres.Failure(description: "\(executable) \(arguments.joined(separator: " ")) exited with "
            + "\(exitStatus): \(text.suffix(2000))")
    }
    return (exitStatus, text)
}

/// Adds to `actions` the closing of every descriptor above stderr: glibc's
/// `posix_spawn_file_actions_addclosefrom_np` (2.34+, not imported into Swift, so looked up), or
/// one close per descriptor `/proc/self/fd` lists.
private func closeInheritedDescriptors(_ actions: inout posix_spawn_file_actions_t) {
    typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    if let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") {
        _ = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, 3)
        return
    }
    for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? [] {
        if let descriptor = Int32(entry), descriptor > 2 { posix_spawn_file_actions_addclose(&actions, descriptor) }
    }
}
