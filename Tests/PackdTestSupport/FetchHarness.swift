import CZlib
import Fetch
import Foundation
import Loop

/// A `Fetcher` on a loop thread, with blocking helpers so tests read top to bottom. Every wait has
/// a generous deadline instead of a sleep.
public final class FetchHarness: @unchecked Sendable {
    public let thread: LoopThread
    public let fetcher: Fetcher

    public init(_ configuration: FetchConfiguration = FetchConfiguration(addressPolicy: .loopbackForTests)) throws {
        let thread = try LoopThread(name: "fetch-test")
        self.thread = thread
        fetcher = try thread.sync { try Fetcher(loop: thread.loop, configuration: configuration) }
    }

    /// Submits all requests at once and waits for every completion, returned in request order.
    public func fetchAll(_ requests: [FetchRequest], deadline: Duration = .seconds(60)) throws -> [Result<FetchResponse, FetchError>] {
        let results = ResultBox(count: requests.count)
        try thread.sync {
            for (index, request) in requests.enumerated() {
                self.fetcher.submit(request) { results.set(index, $0) }
            }
        }
        guard results.wait(deadline: TestTimeScale.scaled(deadline)) else { throw HarnessTimeout() }
        return results.values
    }

    public func fetch(_ request: FetchRequest, deadline: Duration = .seconds(60)) throws -> Result<FetchResponse, FetchError> {
        try fetchAll([request], deadline: deadline)[0]
    }

    public func close() {
        try? thread.sync { self.fetcher.shutdown() }
        thread.shutdown()
    }
}

public struct HarnessTimeout: Error {
    public init() {}
}

/// Completions collected from the loop thread, awaited from the test thread.
public final class ResultBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var slots: [Result<FetchResponse, FetchError>?]
    private var remaining: Int

    public init(count: Int) {
        slots = Array(repeating: nil, count: count)
        remaining = count
    }

    public func set(_ index: Int, _ result: Result<FetchResponse, FetchError>) {
        condition.lock()
        precondition(slots[index] == nil, "completion ran twice")
        slots[index] = result
        remaining -= 1
        condition.broadcast()
        condition.unlock()
    }

    public func wait(deadline: Duration) -> Bool {
        let limit = Date() + deadline.seconds
        condition.lock()
        defer { condition.unlock() }
        while remaining > 0 {
            if !condition.wait(until: limit) { return remaining == 0 }
        }
        return true
    }

    public var values: [Result<FetchResponse, FetchError>] {
        condition.lock()
        defer { condition.unlock() }
        return slots.map { $0 ?? .failure(.cancelled) }
    }
}

extension AddressPolicy {
    public static let loopbackForTests = AddressPolicy(allowedRanges: AddressRange("127.0.0.1/32").map { [$0] } ?? [])
}

extension Result where Success == FetchResponse, Failure == FetchError {
    public var response: FetchResponse? {
        if case let .success(response) = self { return response }
        return nil
    }
    public var error: FetchError? {
        if case let .failure(error) = self { return error }
        return nil
    }
}

/// Deterministic, path-dependent bytes, so a body mixed up with another's is caught.
public func testBody(seed: Int, size: Int) -> [UInt8] {
    var state = UInt64(truncatingIfNeeded: seed) &* 0x9E37_79B9_7F4A_7C15 | 1
    // A plain loop into the buffer: `(0..<size).map` runs unspecialised generic code per byte in a
    // debug build, which under ThreadSanitizer serialises every upstream thread on a runtime lock.
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
        var index = 0
        while index < size {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            buffer[index] = UInt8(truncatingIfNeeded: state)
            index += 1
        }
        initialized = size
    }
}

/// gzip with zlib itself (windowBits 31), as an upstream would serve it.
public func gzip(_ input: [UInt8], level: Int32 = Z_BEST_SPEED) -> [UInt8] {
    var stream = z_stream()
    guard packd_deflateInit2(&stream, level, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY) == Z_OK else { return [] }
    defer { deflateEnd(&stream) }
    var source = input
    var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(input.count))) + 32)
    let produced: Int = source.withUnsafeMutableBufferPointer { src in
        output.withUnsafeMutableBufferPointer { dst in
            stream.next_in = src.baseAddress
            stream.avail_in = uInt(src.count)
            stream.next_out = dst.baseAddress
            stream.avail_out = uInt(dst.count)
            guard deflate(&stream, Z_FINISH) == Z_STREAM_END else { return 0 }
            return dst.count - Int(stream.avail_out)
        }
    }
    return Array(output.prefix(produced))
}

/// Deterministic pseudo-random bytes (SplitMix64) so tests need no fixtures.
public func randomBytes(count: Int, seed: UInt64) -> [UInt8] {
    var state = seed
    var bytes = [UInt8]()
    bytes.reserveCapacity(count)
    while bytes.count < count {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        withUnsafeBytes(of: z) { bytes.append(contentsOf: $0.prefix(count - bytes.count)) }
    }
    return bytes
}
