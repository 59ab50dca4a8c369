import Foundation
import Loop

/// A thread that owns one `PostgresConnection` and runs jobs on it in submission order, so the
/// loop thread never waits for the server: the loop submits, the thread blocks in libpq, the
/// result comes back to the loop through `EventLoop.execute`.
///
/// Chosen over asynchronous libpq on the loop (`PostgresLoopConnection`) by measurement
/// (`packd-bench postgres-client`, same run, 2-core machine): the loop spends 11–88 µs of CPU per
/// statement here whatever its size, against 2.7–2.9 ms per 4 MiB result and 3.8–5.1 ms per
/// 4 MiB of parameters there (libpq parses and copies on the loop thread). Asynchronous libpq
/// wins only the round-trip rate of tiny statements (35,700/s against 22,000/s one in flight),
/// which packd's few, batch-sized statements do not need.
///
/// The connection is made on the thread, and made again after it broke: a job that fails because
/// the server went away reports the error, and the next job gets a fresh connection.
public final class PostgresConnectionThread: @unchecked Sendable {
    public typealias Connect = @Sendable () throws -> PostgresConnection

    /// The error jobs complete with once the thread has stopped.
    public struct Stopped: Error {}

    private let loop: EventLoop
    private let connect: Connect
    private let condition = NSCondition()
    // Guarded by `condition`.
    private var jobs: [Job] = []
    private var stopping = false
    private var finished = false

    private struct Job {
        let run: (PostgresConnection?, Error?) -> Void
    }

    /// Starts the thread; the first job connects (a failure reaches that job).
    public init(loop: EventLoop, name: String = "packd-postgres", connect: @escaping Connect) {
        self.loop = loop
        self.connect = connect
        let thread = Thread { self.run() }
        thread.name = name
        thread.stackSize = 4 << 20
        thread.start()
    }

    /// Runs `work` with the connection on the thread, then `then` with its result on the loop.
    /// Any thread may submit; after `stop()` the job completes with `Stopped`.
    public func submit<T>(_ work: @escaping (PostgresConnection) throws -> T,
                          then: @escaping (Result<T, Error>) -> Void) {
        let loop = self.loop
        let completion = LoopBound(then, loop: loop)
        let job = Job { connection, failure in
            let result: Result<T, Error>
            if let connection {
                result = Result { try work(connection) }
            } else {
                result = .failure(failure ?? Stopped())
            }
            let outcome = LoopBound(result, loop: loop)
            loop.execute { completion.value(outcome.value) }
        }
        condition.lock()
        guard !stopping else {
            condition.unlock()
            job.run(nil, Stopped())
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Finishes the jobs already submitted, closes the connection and joins the thread.
    public func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        while !finished { condition.wait() }
        condition.unlock()
    }

    private func run() {
        var connection: PostgresConnection?
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                connection = nil
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch {
                if connection?.isUsable != true {
                    connection = nil
                    do {
                        connection = try connect()
                    } catch {
                        job.run(nil, error)
                        continue
                    }
                }
                job.run(connection, nil)
            }
        }
    }
}
