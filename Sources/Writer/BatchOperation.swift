import Packs

/// One fact riding a batch — a failure record, an event, a state change, a version record, a
/// webhook outbox row — generic over the connection of the backend that applies it. `apply`
/// runs on the writer thread inside the batch's transaction, after the batch's writes, in
/// submission order with the other operations; `finish` runs once, after the batch committed
/// (nil) or was lost (its error).
///
/// `apply` may run more than once for one `finish`: the SQLite backend applies a batch's
/// operations again alone when the full disk refused the batch, the PostgreSQL backend applies
/// the whole batch again after a conflict or a broken connection. So `apply` records its result
/// (`reporting` does), it does not accumulate one.
public struct BatchOperation<Connection>: @unchecked Sendable {
    public let apply: (Connection) -> Void
    public let finish: (StoreError?) -> Void
    /// false: writes nothing a pack document shows (the event log), so a batch of these alone
    /// moves no pack's change mark unless the backend saw it change a pack anyway.
    public let changesPacks: Bool

    public init(changesPacks: Bool = true, apply: @escaping (Connection) -> Void,
                finish: @escaping (StoreError?) -> Void) {
        self.apply = apply
        self.finish = finish
        self.changesPacks = changesPacks
    }

    /// An operation with a result: `body`'s last result is handed to `then` once the batch
    /// committed, or the batch's error if it was lost. `then` runs on the writer thread (hop
    /// from there); nil: fire and forget. A store wraps `body` in the savepoint its connection
    /// offers when the operation must be able to fail alone.
    public static func reporting<T: Sendable>(changesPacks: Bool = true, _ body: @escaping (Connection) throws -> T,
                                              then: (@Sendable (Result<T, any Error>) -> Void)?) -> BatchOperation {
        let result = OperationResult<T>()
        return BatchOperation(changesPacks: changesPacks, apply: { connection in
            result.value = Result { try body(connection) }
        }, finish: { batchError in
            guard let then else { return }
            if let batchError { return then(.failure(batchError)) }
            then(result.value ?? .failure(StoreError(.other, "the operation did not run")))
        })
    }
}

/// An in-batch operation's result, set on the writer thread before its batch commits and read
/// after, on the same thread.
private final class OperationResult<T: Sendable>: @unchecked Sendable {
    var value: Result<T, any Error>?
}
