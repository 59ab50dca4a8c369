import Packs
import Writer

/// SQLite mode's one writer: the `BatchingWriter` on the `SQLiteWriterBackend`.
public typealias WriterThread = BatchingWriter<SQLiteWriterBackend>

extension BatchingWriter where Backend == SQLiteWriterBackend {
    public typealias Configuration = SQLiteWriterBackend.Configuration

    /// Opens (creating/migrating) the database at `path` and starts the thread.
    public convenience init(path: String, configuration: Configuration = Configuration(),
                            onCommit: @escaping @Sendable (BatchOutcome) -> Void) throws {
        self.init(backend: try SQLiteWriterBackend(path: path, configuration: configuration),
                  limits: configuration.batchLimits, threadName: "packd-writer", onCommit: onCommit)
    }

    /// The thread copying the write-ahead log back (stopped with the writer).
    var checkpointer: WALCheckpointer { backend.checkpointer }
}

extension SQLiteWriterBackend {
    public struct Configuration: Sendable {
        /// A batch commits when it holds this many writes…
        public var maximumBatchCount: Int
        /// …or when its oldest write has waited this long.
        public var maximumBatchDelay: Duration
        /// The clock for `accessed` and other stored times (injectable for tests).
        public var clock: WallClock
        /// Page size for a newly created database (see `SchemaMigrator.openWriter`); an existing
        /// file keeps its own. nil: SQLite's 4096.
        public var pageSize: Int?
        /// Bytes held back on the database's file system for the state changes and events that
        /// must land once it is full (`StorageReserve`); 0: none. `packd serve` holds
        /// `defaultStorageReserveBytes`.
        public var storageReserveBytes: Int64
        /// Versions kept per pack (`--keep-versions`).
        public var keepVersions = 3

        /// 16 MiB: a pack's failure, its events and a few hundred more such commits. A commit logs
        /// whole pages (16 KiB each at `defaultPageSize`), so the room scales with the page size.
        public static let defaultStorageReserveBytes: Int64 = 16 << 20

        /// 16 KiB pages for a new database. A tile body is written page by page — a 4 KiB page is
        /// a WAL frame, its checksum and a later copy into the database for every 4 KiB of a
        /// raster tile — so larger pages cut the writer's and the checkpointer's CPU per tile:
        /// `packd-bench download --tiles 20000` (20 KiB tiles, loopback) 252 → 203 µs of packd CPU
        /// per tile and ~4,900 → ~5,400 tiles/s; against an upstream 20 ms away over HTTP/2 it is
        /// CPU the loop thread gets back (0.80 → 0.89 of curl's rate, `download-wan --page-size`).
        /// 8 KiB pages bought nothing measurable. The price is space where rows fall between pages
        /// (a row of up to 16 KiB is kept whole in a leaf page): Natural Earth's PNG tiles (4 KiB
        /// on average) take 8 % more file, PNGs of 2–25 KiB 18 % more, its vector tiles 1 % less,
        /// 20 KiB tiles the same; 64 KiB pages would waste up to a third of a page on 25–45 KiB
        /// rows. `packd serve --database-page-size 4096` chooses space over CPU. Exports are
        /// new files with SQLite's 4096, as MapLibre writes them: what a phone side-loads does not
        /// change.
        public static let defaultPageSize = 16384

        public init(maximumBatchCount: Int = 256, maximumBatchDelay: Duration = .milliseconds(50),
                    clock: WallClock = .system, pageSize: Int? = defaultPageSize, storageReserveBytes: Int64 = 0) {
            self.maximumBatchCount = max(1, maximumBatchCount)
            self.maximumBatchDelay = maximumBatchDelay
            self.clock = clock
            self.pageSize = pageSize
            self.storageReserveBytes = storageReserveBytes
        }

        public var batchLimits: BatchLimits {
            BatchLimits(maximumBatchCount: maximumBatchCount, maximumBatchDelay: maximumBatchDelay)
        }
    }
}
