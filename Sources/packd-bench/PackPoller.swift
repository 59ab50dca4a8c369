import ArgumentParser
import Foundation
import Glibc

/// One client polling `GET /v1/packs/{id}` at a fixed rate on one keep-alive connection, as a
/// dashboard or a device's provisioning client does, recording how long each answer took (from
/// the request's first byte sent to the body's last byte read). Runs on a thread of its own until
/// `stop()`.
final class PackPoller: @unchecked Sendable {
    private let port: Int
    private let path: String
    private let interval: Double
    private let lock = NSLock()
    private var running = true
    private var latencies: [Double] = []
    private var failure: String?
    private let finished = DispatchSemaphore(value: 0)

    /// `perSecond` polls a second, on a fixed schedule (a late poll does not shift the next).
    init(port: Int, packID: Int, perSecond: Double = 20) {
        self.port = port
        path = "/v1/packs/\(packID)"
        interval = 1 / perSecond
        Thread { [self] in
            poll()
            finished.signal()
        }.start()
    }

    /// Stops polling; the latencies in seconds, in the order measured.
    func stop() throws -> [Double] {
        lock.withLock { running = false }
        finished.wait()
        return try lock.withLock {
            if let failure { throw ValidationError("polling \(path): \(failure)") }
            return latencies
        }
    }

    private func poll() {
        var connection: Int32 = -1
        defer { if connection >= 0 { close(connection) } }
        let start = Self.now()
        var index = 0
        while lock.withLock({ running }) {
            let due = start + Double(index) * interval
            index += 1
            let wait = due - Self.now()
            if wait > 0 { usleep(useconds_t(wait * 1e6)) }
            do {
                if connection < 0 {
                    connection = try LoopbackHTTPClient.connect(port: port)
                    var one: Int32 = 1
                    setsockopt(connection, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
                    var timeout = timeval(tv_sec: 30, tv_usec: 0)
                    setsockopt(connection, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                }
                let began = Self.now()
                try exchange(connection)
                let took = Self.now() - began
                lock.withLock { latencies.append(took) }
            } catch {
                lock.withLock {
                    failure = "\(error)"
                    running = false
                }
            }
        }
    }

    /// One request and its whole answer on the open connection.
    private func exchange(_ connection: Int32) throws {
        let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        guard request.withUnsafeBytes({ send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }) == request.count else {
            throw ValidationError("send failed: \(String(cString: strerror(errno)))")
        }
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var expected: Int?
        while true {
            if expected == nil, let end = Self.find(received) {
                let head = String(decoding: received[..<end], as: UTF8.self)
                guard head.hasPrefix("HTTP/1.1 200") else { throw ValidationError("answered: \(head.prefix(80))") }
                let length = head.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                    .flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
                expected = end + 4 + length
            }
            if let expected, received.count >= expected { return }
            let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw ValidationError("connection closed after \(received.count) bytes") }
            received += chunk[..<count]
        }
    }

    private static func find(_ bytes: [UInt8]) -> Int? {
        guard bytes.count >= 4 else { return nil }
        for index in 0...(bytes.count - 4) where bytes[index] == 13 && bytes[index + 1] == 10 && bytes[index + 2] == 13 && bytes[index + 3] == 10 {
            return index
        }
        return nil
    }

    private static func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }
}

/// The order statistics a latency table shows, in milliseconds.
struct LatencySummary {
    let count: Int
    let p50: Double
    let p99: Double
    let max: Double

    init(_ seconds: [Double]) {
        let sorted = seconds.sorted()
        count = sorted.count
        func at(_ quantile: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count) * quantile).rounded(.up)) - 1)] * 1000
        }
        p50 = at(0.5)
        p99 = at(0.99)
        max = (sorted.last ?? .nan) * 1000
    }

    var text: String { String(format: "%5d polls  p50 %6.2f ms  p99 %6.2f ms  max %7.2f ms", count, p50, p99, max) }
}
