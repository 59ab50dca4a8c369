import ArgumentParser
import Foundation

/// nginx serving a folder on 127.0.0.1: the known-fast baseline that packd's server and download
/// benchmarks are measured beside, in the same run, so results read as ratios.
struct NginxBaseline {
    let process: Process
    let port: Int

    /// Starts nginx on a free loopback port and returns once it accepts connections.
    /// `locations` replaces the default static `location / { }`; the access log (when on) has
    /// nginx's combined format, or `$msec $request_uri` lines when `timedAccessLog` is set.
    /// `listenOptions` follow the address (`ssl http2`); `httpDirectives` go into the `http`
    /// block (an `upstream`, a `log_format`).
    static func start(in directory: URL, root: URL, workers: Int, accessLog: Bool, timedAccessLog: Bool = false,
                      locations: String = "location / { }", listenOptions: String = "", httpDirectives: String = "",
                      name: String = "nginx") throws -> NginxBaseline {
        let port = try freeLoopbackPort()
        let path = directory.path
        let config = """
        worker_processes \(workers);
        daemon off;
        pid \(path)/\(name).pid;
        error_log \(path)/\(name)-error.log warn;
        user root;
        events { worker_connections 4096; }
        http {
            log_format timed '$msec $request_uri';
            access_log \(accessLog ? "\(path)/\(name)-access.log\(timedAccessLog ? " timed" : "")" : "off");
            client_body_temp_path \(path)/body;
            proxy_temp_path \(path)/proxy;
            fastcgi_temp_path \(path)/fastcgi;
            uwsgi_temp_path \(path)/uwsgi;
            scgi_temp_path \(path)/scgi;
            keepalive_requests 1000000;
            \(httpDirectives)
            server {
                listen 127.0.0.1:\(port) \(listenOptions);
                root \(root.path);
                \(locations)
            }
        }
        """
        let configPath = directory.appendingPathComponent("\(name).conf")
        try Data(config.utf8).write(to: configPath)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-p", path, "-e", "\(path)/\(name)-error.log", "-c", configPath.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline && process.isRunning {
            if canConnect(port: port) { return NginxBaseline(process: process, port: port) }
            usleep(20_000)
        }
        throw ValidationError("nginx did not start; see \(path)/\(name)-error.log")
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
    }

    /// A port the kernel considers free right now (nginx cannot report the port it bound).
    private static func freeLoopbackPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
        }
        guard bound else { throw ValidationError("cannot find a free port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    private static func canConnect(port: Int) -> Bool {
        guard let fd = try? LoopbackHTTPClient.connect(port: port) else { return false }
        close(fd)
        return true
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
