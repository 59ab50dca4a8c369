/// Rows read since the last commit, whose `accessed` the writer updates in its next transaction
/// (batched: a read never waits for a write). Collected by `BatchingWriter.touch`, applied by
/// the backend inside a batch (`WriterBatch.touches`).
public struct AccessTouches: Sendable {
    public var tileIDs: Set<Int64> = []
    public var resourceIDs: Set<Int64> = []
    public var isEmpty: Bool { tileIDs.isEmpty && resourceIDs.isEmpty }
    public init() {}
}
