// swift-tools-version:6.1
import PackageDescription

// The module plan of ../shared/spec/architecture.md: C libraries through system library targets,
// pure domain modules (Geo, Plan) with no I/O, and the loop-owned network modules above them.
let package = Package(
    name: "packd",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "packd", targets: ["packd"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
    ],
    targets: [
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // The domain: pack states and their pure lifecycle, the wire types every client decodes,
        // stored records and the store protocols. Imports no other packd module.
        .target(name: "Packs", dependencies: ["CZlib", "TimeFormats"]),
        // Time as text, pure: HTTP-dates (RFC 9110) and the civil calendar arithmetic under them and
        // RFC 3339 timestamps — shared by the domain and the HTTP server, which knows nothing of packs.
        .target(name: "TimeFormats"),

        .target(name: "Loop", dependencies: ["CUV"]),
        .target(
            name: "Server",
            dependencies: [
                "Loop", "CUV", "CHTTPParser", "TimeFormats",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Tile formats as bytes, pure: PMTiles v3 (header, directories, Hilbert ids), protobuf and
        // Mapbox Vector Tile decoding, gzip. Read by exports, archive sources and glyph subsetting.
        .target(name: "TileFormats", dependencies: ["CZlib"]),
        // The one batching writer behind both stores, generic over each store's backend.
        .target(name: "Writer", dependencies: ["Packs"]),
        .target(name: "Store", dependencies: ["Packs", "Writer", "Loop", "CSQLite", "CZlib", "TileFormats"]),
        // Immutable export files: keys, build-once, the directory, eviction, digests.
        .target(name: "Artifacts", dependencies: ["Packs", "Loop", "CCrypto"]),
        // The child process StoreTests SIGKILLs mid-stream to prove crash safety.
        .executableTarget(name: "packd-store-crash-writer", dependencies: ["Store", "Packs"]),

        // What the events say about packs and how they reach the streams: the publisher and its
        // delivery strategies, the broadcaster (coalescing, replay ring, subscribers), the durable
        // log, rolling rates. Below the API: it serves no route.
        .target(
            name: "Events",
            dependencies: ["Packs", "Loop", "Server", .product(name: "Logging", package: "swift-log")]
        ),
        // The HTTP API: routes by concept, API keys, CORS, metrics, strict bodies.
        .target(
            name: "API",
            dependencies: [
                "Packs", "Events", "Jobs", "Server", "Loop", "Plan", "Geo", "CCrypto", "Artifacts", "Webhooks", "TimeFormats",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .target(name: "Geo"),
        .target(name: "Plan", dependencies: ["Packs", "Geo", "TileFormats", "CCurl"]),
        .target(name: "Fetch", dependencies: ["Packs", "Loop", "CCurl", "CUV", "TimeFormats"]),
        // Webhooks: Standard Webhooks signing, the retry schedule, the dispatcher sending the outbox.
        .target(
            name: "Webhooks",
            dependencies: ["Packs", "Fetch", "Loop", "CCrypto", "CCurl", .product(name: "Logging", package: "swift-log")]
        ),
        .testTarget(name: "WebhooksTests", dependencies: ["Webhooks", "Packs", "Fetch", "Loop", "Store", "PackdTestSupport"]),
        // Real `packd serve` processes sending webhooks: kill -9 at random moments, and two
        // cluster nodes on one PostgreSQL.
        .testTarget(
            name: "WebhookServeTests",
            dependencies: ["Postgres", "PostgresTestSupport", "PackdTestSupport", "packd"]
        ),
        // The download engine: one pack's state machine and the scheduler of packs.
        .target(name: "Jobs", dependencies: ["Packs", "Loop", "Fetch", "Plan", "Geo", "WorkSharing", "TimeFormats", "TileFormats"]),

        .executableTarget(
            name: "packd",
            dependencies: [
                "Packs",
                "Loop",
                "Server",
                "API",
                "Events",
                "Artifacts",
                "Store",
                "Fetch",
                "Jobs",
                "Cluster",
                "Postgres",
                "PostgresStore",
                "WorkSharing",
                "Webhooks",
                // The CLI's HTTP client (`packd export`, `wait`, …) is libcurl's easy interface.
                "CCurl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .executableTarget(
            name: "packd-bench",
            dependencies: [
                "Packs",
                "Loop",
                "Store",
                "CSQLite",
                "CZlib",
                "Geo",
                "Plan",
                "Jobs",
                "Fetch",
                "Postgres",
                "PostgresTestSupport",
                // download-wan and cluster: the delaying tile server; download-wan: the test CA it makes.
                "Server",
                "PackdTestSupport",
                "TileFormats",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        // Cluster mode: the libpq client, and a real PostgreSQL from a temporary directory for
        // the tests and benchmarks that need one.
        .target(name: "Postgres", dependencies: ["CLibPQ", "Loop", "CUV"]),
        .target(name: "PostgresTestSupport", dependencies: ["Postgres"], path: "Tests/PostgresTestSupport"),
        .testTarget(name: "PostgresTests", dependencies: ["Postgres", "PostgresTestSupport", "Loop"]),
        // Pure rules of sharing one pack between nodes: the cut into work units, lease timing,
        // each node's share of cluster-wide caps.
        .target(name: "WorkSharing", dependencies: ["Plan", "Geo"]),
        .testTarget(name: "WorkSharingTests", dependencies: ["WorkSharing", "Plan", "Geo"]),
        // Cluster mode's scheduler: packs activated cluster-wide, plans cut into units claimed
        // under leases, Jobs' download engine run per unit, the node's heartbeat and shares.
        .target(name: "Cluster", dependencies: ["Packs", "Jobs", "Fetch", "Loop", "Plan", "Postgres", "PostgresStore", "WorkSharing"]),
        // The cluster-mode store on PostgreSQL.
        .target(name: "PostgresStore", dependencies: ["Packs", "Writer", "Postgres", "WorkSharing", "Loop", "Store"]),
        .testTarget(
            name: "PostgresStoreTests",
            dependencies: [
                "PostgresStore", "Packs", "Postgres", "PostgresTestSupport", "PackdTestSupport", "WorkSharing", "Plan", "Geo",
                "Store", "Jobs", "Fetch", "Loop",
            ]
        ),

        // Real `packd serve` processes in cluster mode on a real PostgreSQL.
        .testTarget(
            name: "ClusterTests",
            dependencies: ["Packs", "Store", "Artifacts", "Postgres", "PostgresTestSupport", "PackdTestSupport", "packd"]
        ),

        // libFuzzer targets (`make fuzz`); a plain build makes `packd-fuzz TARGET FILE…`, a replay tool.
        .executableTarget(
            name: "packd-fuzz",
            dependencies: ["Server", "Loop", "Packs", "Plan", "Geo", "Store", "Fetch", "TileFormats", "Jobs",
                           .product(name: "Logging", package: "swift-log")]
        ),

        .testTarget(name: "PacksTests", dependencies: ["Packs", "TimeFormats", "CZlib", "PackdTestSupport"]),
        // One suite of store tests, run against every store implementation (`StoreFactory.all`).
        .testTarget(name: "StoreContractTests", dependencies: ["Packs", "Writer", "Store", "Loop", "PackdTestSupport", "Postgres", "PostgresStore", "PostgresTestSupport"]),
        .testTarget(name: "LoopTests", dependencies: ["Loop"]),
        .testTarget(name: "ArtifactsTests", dependencies: ["Artifacts", "Loop", "PackdTestSupport"]),
        .testTarget(
            name: "APITests",
            dependencies: [
                "API", "Events", "Artifacts", "Jobs", "Packs", "Server", "Loop", "Store", "CZlib", "PackdTestSupport",
                // Store-numbered (cluster mode) event streams on a real PostgreSQL.
                "Postgres", "PostgresStore", "PostgresTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ]
        ),
        .testTarget(
            name: "ServerTests",
            dependencies: [
                "Server", "Loop", "PackdTestSupport", "packd",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(name: "StoreTests", dependencies: ["Store", "Writer", "Packs", "CSQLite", "Loop", "PackdTestSupport", "packd-store-crash-writer"]),
        .testTarget(name: "StoreIOTests", dependencies: ["Store", "Packs", "CZlib", "PackdTestSupport", "TileFormats"]),
        .testTarget(name: "GeoTests", dependencies: ["Geo"]),
        .testTarget(name: "TileFormatsTests", dependencies: ["TileFormats", "PackdTestSupport"]),
        .testTarget(name: "PlanTests", dependencies: ["Plan", "Packs", "Geo", "TileFormats"]),
        // The in-process upstream and fetch harness shared by the network tests.
        .target(name: "PackdTestSupport", dependencies: ["Packs", "Fetch", "Loop", "CZlib", "Store", "TileFormats", "TimeFormats",
                                                         .product(name: "Logging", package: "swift-log")],
                path: "Tests/PackdTestSupport"),
        .testTarget(name: "FetchTests", dependencies: ["Fetch", "Packs", "Loop", "CZlib", "PackdTestSupport"]),
        // Depends on `packd` so the end-to-end test finds the built server next to the test bundle.
        // The client subcommands as real processes against a real `packd serve`.
        .testTarget(name: "CLITests", dependencies: ["Packs", "API", "PackdTestSupport", "packd"]),
        .testTarget(name: "JobsTests", dependencies: ["Jobs", "Packs", "Fetch", "Loop", "Store", "Plan", "Geo", "PackdTestSupport", "packd", "WorkSharing"]),
    ],
    swiftLanguageModes: [.v6]
)
