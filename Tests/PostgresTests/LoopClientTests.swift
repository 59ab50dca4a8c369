import Foundation
import Loop
import Postgres
import PostgresTestSupport
import Testing

/// The two ways the loop talks to PostgreSQL without blocking: a connection thread answering
/// through the loop, and asynchronous libpq on a `uv_poll`.
@Suite struct LoopClientTests {
    let url: PostgresURL

    init() throws {
        url = try TemporaryPostgres.shared().makeDatabase(prefix: "loopclient")
    }

    /// Jobs run in submission order on the thread; results arrive on the loop thread.
    @Test func connectionThreadAnswersOnTheLoopInOrder() throws {
        let loopThread = try LoopThread()
        defer { loopThread.shutdown() }
        let url = self.url
        let thread = PostgresConnectionThread(loop: loopThread.loop) { try PostgresConnection(url: url) }
        defer { thread.stop() }
        let results = Collected<String>()
        let done = DispatchSemaphore(value: 0)
        try loopThread.sync {
            for index in 0..<50 {
                thread.submit({ connection in
                    try connection.scalarInt("SELECT $1::int8 * 2", [.int8(Int64(index))])
                }, then: { result in
                    results.append("\(loopThread.loop.inLoopThread) \((try? result.get()).flatMap { $0 } ?? -1)")
                    if index == 49 { done.signal() }
                })
            }
        }
        done.wait()
        #expect(results.all == (0..<50).map { "true \($0 * 2)" })
    }

    /// A job whose connection was killed fails with a lost-connection error; the next job gets a
    /// new connection.
    @Test func connectionThreadReconnectsAfterTheConnectionBroke() throws {
        let loopThread = try LoopThread()
        defer { loopThread.shutdown() }
        let url = self.url
        let thread = PostgresConnectionThread(loop: loopThread.loop) { try PostgresConnection(url: url) }
        defer { thread.stop() }
        let killer = try PostgresConnection(url: url)

        func run<T: Sendable>(_ work: @escaping @Sendable (PostgresConnection) throws -> T) -> Result<T, Error> {
            let done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var outcome: Result<T, Error>?
            loopThread.loop.execute {
                thread.submit(work) { result in
                    outcome = result
                    done.signal()
                }
            }
            done.wait()
            return outcome!
        }

        let first = try run { $0.backendProcessID }.get()
        #expect(try killer.scalarInt("SELECT count(*) FROM pg_terminate_backend($1::int4, 30000) AS t WHERE t",
                                     [.int8(Int64(first))]) == 1)
        let failed = run { try $0.scalarInt("SELECT 1") }
        #expect((failed.failureValue as? PostgresError)?.isConnectionLost == true)
        let second = try run { $0.backendProcessID }.get()
        #expect(second != first)
        #expect(try run { try $0.scalarInt("SELECT 7") }.get() == 7)
    }

    /// After stop, submitted jobs complete with `Stopped` and never run.
    @Test func aStoppedThreadRefusesJobs() throws {
        let loopThread = try LoopThread()
        defer { loopThread.shutdown() }
        let url = self.url
        let thread = PostgresConnectionThread(loop: loopThread.loop) { try PostgresConnection(url: url) }
        thread.stop()
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var ran = false
        nonisolated(unsafe) var outcome: Result<Int, Error>?
        loopThread.loop.execute {
            thread.submit({ _ in
                ran = true
                return 1
            }, then: { result in
                outcome = result
                done.signal()
            })
        }
        done.wait()
        #expect(!ran)
        #expect(outcome?.failureValue is PostgresConnectionThread.Stopped)
    }

    /// Asynchronous libpq: statements answer in order on the loop, errors carry the SQL, and
    /// notifications arrive without a statement pending.
    @Test func loopConnectionQueriesAndHearsNotifications() throws {
        let loopThread = try LoopThread()
        defer { loopThread.shutdown() }
        let connection = try PostgresConnection(url: url)
        try connection.listen("loop_channel")
        let client = try loopThread.sync { LoopBound(try PostgresLoopConnection(loop: loopThread.loop, connection: connection), loop: loopThread.loop) }
        let results = Collected<String>()
        let done = DispatchSemaphore(value: 0)
        let body = [UInt8]((0..<300_000).map { UInt8(truncatingIfNeeded: $0) })
        try loopThread.sync {
            client.value.onNotification = { notification in
                results.append("notify \(notification.payload)")
                done.signal()
            }
            for index in 0..<20 {
                client.value.query("SELECT $1::int8 + 1", [.int8(Int64(index))]) { result in
                    results.append("\(loopThread.loop.inLoopThread) \((try? result.get().first?.int64(0)) ?? -1)")
                }
            }
            client.value.query("SELECT length($1::bytea)::int8, $1::bytea", [.bytea(body)]) { result in
                let row = try? result.get().first
                results.append("bytes \((try? row?.int64(0)) ?? -1) \((try? row?.bytes(1)) == body)")
            }
            client.value.query("SELECT * FROM no_such_table") { result in
                let error = result.failureValue
                results.append("error \(error?.sqlState ?? "-") \(error?.sql ?? "-")")
                done.signal()
            }
        }
        done.wait()
        #expect(results.all == (0..<20).map { "true \($0 + 1)" } + ["bytes 300000 true", "error 42P01 SELECT * FROM no_such_table"])

        try PostgresConnection(url: url).notify("loop_channel", payload: "hello")
        done.wait()
        #expect(results.all.last == "notify hello")
        try loopThread.sync { client.value.close() }
    }

    /// A terminated session is noticed without a statement pending (a listener must reconnect):
    /// the owner is told once, and later statements fail at once instead of waiting forever.
    @Test func loopConnectionReportsALostConnection() throws {
        let loopThread = try LoopThread()
        defer { loopThread.shutdown() }
        let connection = try PostgresConnection(url: url)
        let pid = connection.backendProcessID
        try connection.listen("lost_channel")
        let client = try loopThread.sync { LoopBound(try PostgresLoopConnection(loop: loopThread.loop, connection: connection), loop: loopThread.loop) }
        let events = Collected<String>()
        let lost = DispatchSemaphore(value: 0)
        try loopThread.sync {
            client.value.onConnectionLost = { error in
                events.append("lost \(error.isConnectionLost)")
                lost.signal()
            }
        }
        #expect(try PostgresConnection(url: url).scalarInt(
            "SELECT count(*) FROM pg_terminate_backend($1::int4, 30000) AS t WHERE t", [.int8(Int64(pid))]) == 1)
        lost.wait()
        let answered = DispatchSemaphore(value: 0)
        try loopThread.sync {
            client.value.query("SELECT 1") { result in
                events.append("query \(result.failureValue?.isConnectionLost == true)")
                answered.signal()
            }
        }
        answered.wait()
        #expect(events.all == ["lost true", "query true"])
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
