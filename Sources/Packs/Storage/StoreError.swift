/// Why a store could not do what it was asked, in the terms its callers act on. Each store maps
/// its engine's errors onto it (SQLite's result codes, PostgreSQL's SQLSTATEs), keeping the
/// engine's own message, so the download layer can tell a full disk from anything else.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The disk, or the database's configured maximum size, is full.
        case storageFull
        /// The database is not one this store can read.
        case corrupt
        case other
    }

    public let kind: Kind
    /// The engine's message (and the statement, where it has one).
    public let message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var isStorageFull: Bool { kind == .storageFull }
    public var description: String { message }
}
