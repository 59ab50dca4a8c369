import CLibPQ
import CUV
import Loop

/// Asynchronous libpq on the loop thread: the connection's socket in a `uv_poll`, statements
/// sent with `PQsendQueryPrepared` and answered when `PQisBusy` says the result is complete. No
/// thread hop, but everything libpq does — encoding parameters, reading and parsing results —
/// runs on the loop: about 3 ms of loop CPU per 4 MiB result (`packd-bench postgres-client`), so the
/// store's statements go through `PostgresConnectionThread` instead. It suits a `LISTEN`
/// connection, whose notifications are small and arrive unasked, with no thread waiting for them.
///
/// Loop thread only. Statements run one at a time in submission order.
public final class PostgresLoopConnection: LoopHandleOwner {
    public typealias Completion = (Result<PostgresRows, PostgresError>) -> Void

    private let connection: PostgresConnection
    private var poll: UnsafeMutablePointer<uv_poll_t>?
    private var queue: [Pending] = []
    private var queueHead = 0
    private var current: Pending?
    private var phase = Phase.idle
    private var latest: OpaquePointer?
    private var prepared: [String: String] = [:]
    private var nextStatement = 0
    /// Called on the loop for each notification of a channel `connection` listens to.
    public var onNotification: ((PostgresNotification) -> Void)?
    /// Called once on the loop when the connection breaks (the server went away, the session
    /// was terminated): statements under way and queued have failed, and this object is closed.
    /// A listener reconnects and reads what it may have missed from the tables.
    public var onConnectionLost: ((PostgresError) -> Void)?

    private enum Phase { case idle, preparing, executing }

    private struct Pending {
        let sql: String
        let parameters: PostgresParameters
        /// The prepared-statement cache key: SQL and parameter types.
        let key: String
        let completion: Completion
    }

    /// Takes over a connected `connection` (made off the loop: connecting blocks). Loop thread.
    public init(loop: EventLoop, connection: PostgresConnection) throws(PostgresError) {
        self.connection = connection
        guard PQsetnonblocking(connection.handle, 1) == 0 else {
            throw PostgresError(kind: .connection, message: PostgresError.connectionMessage(connection.handle) ?? "PQsetnonblocking")
        }
        let handle = allocateHandle(uv_poll_t.self, owner: self)
        guard uv_poll_init_socket(loop.raw, handle, connection.socket) == 0 else {
            Unmanaged<PostgresLoopConnection>.passUnretained(self).release()
            handle.deallocate()
            throw PostgresError(kind: .connection, message: "uv_poll_init_socket failed")
        }
        poll = handle
        watch(writable: false)
    }

    /// Queues `sql`; `completion` runs on the loop with its rows or error.
    public func query(_ sql: String, _ parameters: [PostgresValue] = [], completion: @escaping Completion) {
        guard poll != nil else {
            return completion(.failure(PostgresError(kind: .connection, message: "connection closed", sql: sql)))
        }
        let encoded: PostgresParameters
        do {
            encoded = try PostgresParameters(parameters)
        } catch {
            return completion(.failure(error))
        }
        let key = sql + "\u{0}" + encoded.types.map(String.init).joined(separator: ",")
        queue.append(Pending(sql: sql, parameters: encoded, key: key, completion: completion))
        if phase == .idle { startNext() }
    }

    /// Stops watching the socket and fails what is queued. The connection is closed with this object.
    public func close() {
        shutDown(PostgresError(kind: .connection, message: "connection closed"))
    }

    /// The connection broke: fail everything and tell the owner.
    private func lose() {
        let error = PostgresError(kind: .connection,
                                  message: PostgresError.connectionMessage(connection.handle) ?? "connection lost")
        let lost = onConnectionLost
        shutDown(error)
        lost?(error)
    }

    private func shutDown(_ error: PostgresError) {
        guard let poll else { return }
        self.poll = nil
        uv_poll_stop(poll)
        closeHandle(poll)
        if let latest { PQclear(latest) }
        latest = nil
        phase = .idle
        let failed = (current.map { [$0] } ?? []) + queue[queueHead...]
        current = nil
        queue.removeAll()
        queueHead = 0
        for pending in failed {
            pending.completion(.failure(PostgresError(kind: error.kind, message: error.message, sql: pending.sql)))
        }
    }

    public func handleDidClose() {
        onNotification = nil
        onConnectionLost = nil
    }

    private func startNext() {
        guard poll != nil, queueHead < queue.count else {
            phase = .idle
            if queueHead > 0 {
                queue.removeAll(keepingCapacity: true)
                queueHead = 0
            }
            return
        }
        let pending = queue[queueHead]
        queueHead += 1
        current = pending
        if prepared[pending.key] != nil {
            execute(pending)
        } else {
            phase = .preparing
            let name = "packd_loop_\(nextStatement)"
            nextStatement += 1
            prepared[pending.key] = name
            let sent = pending.parameters.types.withUnsafeBufferPointer {
                PQsendPrepare(connection.handle, name, pending.sql, pending.parameters.count, $0.baseAddress)
            }
            guard sent == 1 else { return connection.isUsable ? finish(with: nil) : lose() }
            flush()
        }
    }

    private func execute(_ pending: Pending) {
        phase = .executing
        let (handle, name) = (connection.handle, prepared[pending.key]!)
        let sent = pending.parameters.withPointers { count, values, lengths, formats in
            PQsendQueryPrepared(handle, name, count, values, lengths, formats, 1)
        }
        guard sent == 1 else { return connection.isUsable ? finish(with: nil) : lose() }
        flush()
    }

    private func flush() {
        switch PQflush(connection.handle) {
        case 0: watch(writable: false)
        case 1: watch(writable: true)
        default: lose()
        }
    }

    private func watch(writable: Bool) {
        guard let poll else { return }
        let events = Int32(UV_READABLE.rawValue) | (writable ? Int32(UV_WRITABLE.rawValue) : 0)
        uv_poll_start(poll, events) { handle, status, events in
            let owner = handleOwner(handle, as: PostgresLoopConnection.self)
            owner.socketReady(writable: status >= 0 && events & Int32(UV_WRITABLE.rawValue) != 0)
        }
    }

    private func socketReady(writable: Bool) {
        let handle = connection.handle
        if writable { flush() }
        guard poll != nil else { return }
        guard PQconsumeInput(handle) == 1, connection.isUsable else { return lose() }
        while let notify = PQnotifies(handle) {
            let notification = PostgresNotification(notify.pointee)
            PQfreemem(notify)
            onNotification?(notification)
        }
        while current != nil, PQisBusy(handle) == 0 {
            guard let result = PQgetResult(handle) else {
                let result = latest
                latest = nil
                finish(with: result)
                return
            }
            if let previous = latest { PQclear(previous) }
            latest = result
        }
    }

    /// One statement's results are all in (or the connection failed): go on from preparing to
    /// executing, or complete it and start the next.
    private func finish(with result: OpaquePointer?) {
        guard let pending = current else { return }
        let status = result.map(PQresultStatus)
        let succeeded = status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK
        if phase == .preparing, succeeded {
            PQclear(result)
            return execute(pending)
        }
        current = nil
        if succeeded, let result {
            pending.completion(.success(PostgresRows(result: result, sql: pending.sql)))
        } else {
            if phase == .preparing { prepared[pending.key] = nil }
            let error = PostgresError(result: result, connection: connection.handle, sql: pending.sql)
            PQclear(result)
            pending.completion(.failure(error))
        }
        startNext()
    }
}
