/// What one committed batch made durable, handed to the writer's completion callback.
public struct BatchOutcome: Sendable {
    /// Rows the batch held (the writer's configured batch size bounds it; operations riding
    /// the batch are not rows).
    public var committedWrites = 0
    /// Writes applied (a `notModified`/`linkExisting` for a row that does not exist is skipped).
    public var appliedWrites = 0
    /// Writes that found no row to revalidate or link (the caller must download them).
    public var missing: [ResourceKey] = []
    /// The progress rows of every pack the batch touched, as committed.
    public var progress: [Int64: StoredProgress] = [:]
    /// Packs whose tile links were refused because the global tile limit was reached.
    public var tileLimitExceeded: Set<Int64> = []
    /// Distinct tiles linked to any pack after the batch.
    public var linkedTiles: Int64 = 0
    /// Set when the batch was rolled back (nothing above is durable then); `isStorageFull`
    /// tells the download layer to fail packs with `storage_full`.
    public var error: StoreError?
    /// With `error`: the packs that had writes in the lost batch (to retry or fail them).
    public var failedPackIDs: Set<Int64> = []
    /// How long the writer took to apply and commit the batch (for `/metrics`).
    public var duration: Duration = .zero

    public init() {}
}
