import ArgumentParser
import Foundation
import Loop
import Postgres
import PostgresTestSupport

/// How packd talks to PostgreSQL without blocking its loop, decided by measuring the two ways
/// architecture.md allows, in the same run against a real server started from a temporary
/// directory:
///
/// - **thread**: blocking libpq on a `PostgresConnectionThread` per connection; the loop submits
///   a job and gets the decoded result back through `EventLoop.execute`.
/// - **loop**: asynchronous libpq on the loop thread (`PostgresLoopConnection`: the socket in a
///   `uv_poll`, `PQsendQueryPrepared`, results parsed when complete).
///
/// Each workload is run by both, alternating, and reports operations per second, the loop
/// thread's CPU time per operation (what the approach takes from everything else on the loop —
/// connections, transfers, SSE; measured with the thread's own CPU clock, so other processes on a
/// shared machine do not blur it), and the loop's turn latency: a 1 ms repeating timer records
/// the gaps between its firings (a healthy loop fires every 1–2 ms; on a loaded machine the
/// scheduler adds gaps to both sides alike).
struct PostgresClientBenchmark: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "postgres-client",
        abstract: "Blocking libpq on threads vs asynchronous libpq on the loop: round trips/s and loop-turn latency.")

    @Option(help: "Round trips per ping run.") var pings = 5_000
    @Option(help: "Connections of the concurrent ping run.") var connections = 4
    @Option(help: "Statements per write and per read run.") var batches = 40
    @Option(help: "Rows per write/read statement.") var rows = 256
    @Option(help: "Body size in bytes.") var bodySize = 16 * 1024
    @Option(help: "Alternating rounds; the best of each side is reported.") var rounds = 3
    @Flag(help: "Run the server with fsync and synchronous commit on.") var durable = false

    func run() throws {
        guard pings > 0, connections > 0, batches > 0, rows > 0, bodySize > 0, rounds > 0 else {
            throw ValidationError("all counts must be positive")
        }
        print("starting PostgreSQL (initdb into a temporary directory)…")
        let server = try TemporaryPostgres.start(.init(durable: durable))
        defer { server.stop() }
        let url = try server.makeDatabase(prefix: "bench")
        let setup = try PostgresConnection(url: url)
        try setup.execute("CREATE TABLE bench_bodies (id int8 PRIMARY KEY, data bytea NOT NULL); "
            + "ALTER TABLE bench_bodies ALTER COLUMN data SET STORAGE EXTERNAL")
        var generator = SystemRandomNumberGenerator()
        let bodies: [[UInt8]?] = (0..<rows).map { _ in (0..<bodySize).map { _ in UInt8.random(in: 0...255, using: &generator) } }
        let readIDs = PostgresValue.int8Array((0..<Int64(rows)).map { $0 })
        try setup.query("INSERT INTO bench_bodies SELECT * FROM unnest($1::int8[], $2::bytea[])", [readIDs, .byteaArray(bodies)])

        let loopThread = try LoopThread(name: "bench-loop")
        defer { loopThread.shutdown() }
        let workloads: [Workload] = [
            Workload(name: "ping, 1 in flight", operations: pings, concurrency: 1) { index in
                Statement(sql: "SELECT $1::int8", parameters: [.int8(Int64(index))]) { try $0.first?.int64(0) == Int64(index) }
            },
            Workload(name: "ping, \(connections) connections", operations: pings, concurrency: connections) { index in
                Statement(sql: "SELECT $1::int8", parameters: [.int8(Int64(index))]) { try $0.first?.int64(0) == Int64(index) }
            },
            Workload(name: "write \(rows) × \(bodySize / 1024) KiB", operations: batches, concurrency: 1) { index in
                let ids = (0..<Int64(rows)).map { Int64(1_000_000) + Int64(index) * Int64(rows) + $0 }
                return Statement(sql: "INSERT INTO bench_bodies SELECT * FROM unnest($1::int8[], $2::bytea[]) "
                    + "ON CONFLICT (id) DO UPDATE SET data = excluded.data",
                    parameters: [.int8Array(ids), .byteaArray(bodies)]) { $0.affectedRows == rows }
            },
            Workload(name: "read \(rows) × \(bodySize / 1024) KiB", operations: batches, concurrency: 1) { _ in
                Statement(sql: "SELECT data FROM bench_bodies WHERE id = ANY($1)", parameters: [readIDs]) { rows in
                    // Decoded into Swift values as a store read would.
                    var total = 0
                    for row in rows { total += try row.bytes(0).count }
                    return total == self.rows * self.bodySize
                }
            },
        ]
        var results: [String: [Side: Measurement]] = [:]
        for round in 0..<rounds {
            for workload in workloads {
                let order: [Side] = round % 2 == 0 ? [.thread, .loop] : [.loop, .thread]
                for side in order {
                    let measurement = try measure(workload, side: side, url: url, loopThread: loopThread)
                    print(String(format: "round %d  %-28@ %-6@ %9.0f ops/s  loop cpu %8.1f µs/op  loop gap p50 %5.2f ms  p99 %6.2f ms  max %6.2f ms",
                                 round, workload.name as NSString, side.rawValue as NSString, measurement.rate,
                                 measurement.loopMicrosecondsPerOperation, measurement.gapP50, measurement.gapP99, measurement.gapMax))
                    results[workload.name, default: [:]][side] = results[workload.name]?[side].map { $0.best(measurement) } ?? measurement
                }
            }
        }
        print("\nbest of \(rounds) rounds (ops/s higher is better; loop CPU and gaps lower are better):")
        for workload in workloads {
            guard let thread = results[workload.name]?[.thread], let loop = results[workload.name]?[.loop] else { continue }
            print(String(format: "%-28@ thread %9.0f ops/s, loop cpu %8.1f µs/op, max gap %6.2f ms | loop %9.0f ops/s, loop cpu %8.1f µs/op, max gap %6.2f ms | loop/thread %.2fx ops/s",
                         workload.name as NSString, thread.rate, thread.loopMicrosecondsPerOperation, thread.gapMax,
                         loop.rate, loop.loopMicrosecondsPerOperation, loop.gapMax, loop.rate / thread.rate))
        }
    }

    enum Side: String { case thread, loop }

    struct Statement {
        let sql: String
        let parameters: [PostgresValue]
        /// Decodes the rows (on the thread for `thread`, on the loop for `loop`) and checks them.
        let check: (PostgresRows) throws -> Bool
    }

    struct Workload {
        let name: String
        let operations: Int
        let concurrency: Int
        let statement: (Int) -> Statement
    }

    struct Measurement {
        var rate: Double
        var loopMicrosecondsPerOperation: Double
        var gapP50: Double
        var gapP99: Double
        var gapMax: Double

        func best(_ other: Measurement) -> Measurement {
            Measurement(rate: max(rate, other.rate),
                        loopMicrosecondsPerOperation: min(loopMicrosecondsPerOperation, other.loopMicrosecondsPerOperation),
                        gapP50: min(gapP50, other.gapP50), gapP99: min(gapP99, other.gapP99), gapMax: min(gapMax, other.gapMax))
        }
    }

    /// CPU seconds the calling thread has used.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    /// Runs `workload` through `side`'s clients on the loop and waits for it on this thread.
    private func measure(_ workload: Workload, side: Side, url: PostgresURL, loopThread: LoopThread) throws -> Measurement {
        let loop = loopThread.loop
        let clients: [LoopBound<Client>]
        switch side {
        case .thread:
            clients = (0..<workload.concurrency).map { _ in
                LoopBound(Client.thread(PostgresConnectionThread(loop: loop) { try PostgresConnection(url: url, applicationName: "bench-thread") }), loop: loop)
            }
        case .loop:
            let connections = try (0..<workload.concurrency).map { _ in try PostgresConnection(url: url, applicationName: "bench-loop") }
            let handOver = connections
            clients = try loopThread.sync {
                try handOver.map { LoopBound(Client.loop(try PostgresLoopConnection(loop: loop, connection: $0)), loop: loop) }
            }
        }
        // Warm up: connect (thread side) and prepare the statement on every client.
        try drive(workload, clients: clients, operations: workload.concurrency, sampling: false, loopThread: loopThread)
        // Timed and CPU-measured without the sampler (its wakeups cost loop CPU too), then
        // sampled for the loop's gaps.
        let start = DispatchTime.now()
        let loopCPU = try drive(workload, clients: clients, operations: workload.operations, sampling: false,
                                loopThread: loopThread).loopCPU
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
        let gaps = try drive(workload, clients: clients, operations: workload.operations, sampling: true,
                             loopThread: loopThread).gaps
        try loopThread.sync {
            for client in clients {
                if case .loop(let connection) = client.value { connection.close() }
            }
        }
        for client in clients {
            if case .thread(let thread) = client.value { thread.stop() }
        }
        let sorted = gaps.sorted()
        func percentile(_ p: Double) -> Double { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
        return Measurement(rate: Double(workload.operations) / seconds,
                           loopMicrosecondsPerOperation: loopCPU * 1e6 / Double(workload.operations),
                           gapP50: percentile(0.5), gapP99: percentile(0.99), gapMax: sorted.last ?? 0)
    }

    enum Client {
        case thread(PostgresConnectionThread)
        case loop(PostgresLoopConnection)

        /// Loop thread: runs `statement`, then `done` on the loop with whether its check held.
        func run(_ statement: Statement, done: @escaping (Result<Bool, Error>) -> Void) {
            switch self {
            case .thread(let thread):
                thread.submit({ connection in try statement.check(try connection.query(statement.sql, statement.parameters)) },
                              then: done)
            case .loop(let connection):
                connection.query(statement.sql, statement.parameters) { result in
                    done(result.mapError { $0 as Error }.flatMap { rows in Result { try statement.check(rows) } })
                }
            }
        }
    }

    /// Issues `operations` statements, each client keeping one in flight; with `sampling`, a 1 ms
    /// timer samples the loop meanwhile. Returns the timer's gaps in milliseconds and the loop
    /// thread's CPU seconds.
    @discardableResult
    private func drive(_ workload: Workload, clients: [LoopBound<Client>], operations: Int, sampling: Bool,
                       loopThread: LoopThread) throws -> (gaps: [Double], loopCPU: Double) {
        let finished = DispatchSemaphore(value: 0)
        let state = DriveState()
        try loopThread.sync {
            state.loopCPU = Self.threadCPUSeconds()
            let timer = LoopTimer(loop: loopThread.loop)
            var last = DispatchTime.now().uptimeNanoseconds
            if sampling {
                timer.start(after: 1, repeat: 1) {
                    let now = DispatchTime.now().uptimeNanoseconds
                    state.gaps.append(Double(now - last) / 1e6)
                    last = now
                }
            }
            var issued = 0
            var completed = 0
            func next(_ client: Client) {
                guard issued < operations else { return }
                let statement = workload.statement(issued)
                issued += 1
                client.run(statement) { result in
                    completed += 1
                    switch result {
                    case .success(true): break
                    case .success(false): state.failure = state.failure ?? "a result did not check out"
                    case .failure(let error): state.failure = state.failure ?? "\(error)"
                    }
                    if completed == operations {
                        state.loopCPU = Self.threadCPUSeconds() - state.loopCPU
                        timer.close()
                        finished.signal()
                    } else {
                        next(client)
                    }
                }
            }
            for client in clients { next(client.value) }
        }
        finished.wait()
        if let failure = state.failure { throw ValidationError("\(workload.name): \(failure)") }
        return (state.gaps, state.loopCPU)
    }

    private final class DriveState: @unchecked Sendable {
        var gaps: [Double] = []
        var loopCPU: Double = 0
        var failure: String?
    }
}
