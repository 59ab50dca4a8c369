import Foundation
import Glibc

/// Blocking 127.0.0.1 sockets for the two targets that drive packd over a real connection.
enum LoopbackSocket {
    /// A connected socket; a connect interrupted by a signal (libFuzzer's timers) is retried on a
    /// new socket.
    static func connect(port: Int, timeoutSeconds: Int) -> Int32 {
        var attempts = 0
        while true {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
            invariant(fd >= 0, "socket: \(String(cString: strerror(errno)))")
            setTimeout(fd, seconds: timeoutSeconds)
            var address = loopback(port: port)
            let status = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if status == 0 { return fd }
            let error = errno
            Glibc.close(fd)
            attempts += 1
            invariant(error == EINTR && attempts < 10, "connect to 127.0.0.1:\(port): \(String(cString: strerror(error)))")
        }
    }

    /// A listening socket on an ephemeral port.
    static func listen() -> (fd: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = loopback(port: 0)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let ok = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && Glibc.listen(fd, 64) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        invariant(ok, "cannot listen on 127.0.0.1: \(String(cString: strerror(errno)))")
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    static func setTimeout(_ fd: Int32, seconds: Int) {
        var time = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    /// Sends everything it can; false when the peer stopped taking bytes (closed or reset).
    @discardableResult
    static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + offset, bytes.count - offset, Int32(MSG_NOSIGNAL)) }
            if sent < 0 && errno == EINTR { continue }
            if sent <= 0 { return false }
            offset += sent
        }
        return true
    }

    /// Reads until end of stream, a reset, or `limit` bytes; nil when the read timed out.
    static func readToEnd(_ fd: Int32, limit: Int) -> [UInt8]? {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while received.count < limit {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                received += chunk[0..<count]
            } else if count == 0 || errno == ECONNRESET {
                return received
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return nil
            } else {
                return received
            }
        }
        return received
    }

    private static func loopback(port: Int) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return address
    }
}
