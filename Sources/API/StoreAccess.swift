import Loop
import Store

/// How route handlers reach the database without blocking the loop: reads on libuv's thread pool
/// with a pooled `StoreReader`, writes on the one `WriterThread`. Every completion runs on the
/// loop thread, so handlers touch their responder only there.
public final class StoreAccess: @unchecked Sendable {
    public let loop: EventLoop
    public let writer: WriterThread
    private let readers: StoreReaderPool

    /// `path` is the database the writer opened (it created and migrated it).
    public init(loop: EventLoop, writer: WriterThread, path: String) {
        self.loop = loop
        self.writer = writer
        readers = StoreReaderPool(path: path, onAccess: { [weak writer] key, id in
            switch key {
            case .tile: writer?.touch(tileID: id)
            case .resource: writer?.touch(resourceID: id)
            }
        })
    }

    /// Runs `query` on a pool thread; `then` gets its result on the loop thread. Loop thread only.
    public func read<T: Sendable>(_ query: @escaping @Sendable (StoreReader) throws -> T,
                                  then: @escaping (Result<T, any Error>) -> Void) {
        let readers = readers
        loop.runOnThreadPool({ Result { try readers.withReader(query) } }, then: then)
    }

    /// Runs `operation` on the writer thread; `then` gets its result on the loop thread. From any
    /// thread; `then` must be safe to send there (it is only ever called on the loop).
    public func write<T: Sendable>(_ operation: @escaping @Sendable (OfflineDatabase) throws -> T,
                                   then: @escaping (Result<T, any Error>) -> Void) {
        let loop = loop
        let completion = LoopBound(then)
        writer.perform(operation) { result in
            loop.execute { completion.value(result) }
        }
    }

    /// A reader on the caller's thread, for start-up work before the loop runs.
    public func readNow<T>(_ query: (StoreReader) throws -> T) throws -> T {
        try readers.withReader(query)
    }
}
