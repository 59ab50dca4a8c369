import Packs

/// The `ResourceSink` half of a store, written once for every store whose writes go through a
/// `BatchingWriter`: rows, operations riding a batch, commit waiters and flushes go to the writer,
/// and their completions come back through `deliver` (the store's loop thread). A store states
/// where its completions run and how its errors read outside it; the rest is here.
public protocol WriterSink: ResourceSink {
    associatedtype Backend: WriterBackend where Backend.Connection: StoreWriting

    var writer: BatchingWriter<Backend> { get }
    /// Runs `work` where the store's completions run (its loop thread).
    func deliver(_ work: @escaping @Sendable () -> Void)
    /// `error` as callers outside the store act on it (a full disk as `StoreError.storageFull`).
    func storeError(_ error: any Error) -> any Error
}

extension WriterSink {
    public func storeError(_ error: any Error) -> any Error { error }

    public func submit(_ writes: [ResourceWrite]) {
        writer.submit(contentsOf: writes)
    }

    /// In a savepoint of the open batch (`WriterBackend.savepoint`): if it throws, only its own
    /// changes are rolled back.
    public func inBatch<T: Sendable>(_ operation: @escaping @Sendable (any StoreWriting) throws -> T,
                                     then: (@Sendable (Result<T, any Error>) -> Void)?) {
        writer.inBatch(savepoint: { try operation($0) }, then: then.map { then in
            { [self] result in
                let result = result.mapError(storeError)
                deliver { then(result) }
            }
        })
    }

    public func whenCommitted(_ then: @escaping @Sendable () -> Void) {
        writer.whenCommitted { [self] in deliver(then) }
    }

    public func flush(_ then: @escaping @Sendable () -> Void) {
        writer.flush { [self] in deliver(then) }
    }

    public var pendingWrites: Int { writer.pendingWrites }
}
