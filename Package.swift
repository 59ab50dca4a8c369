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
    ],
    targets: [
        .systemLibrary(name: "CUV", pkgConfig: "libuv", providers: [.apt(["libuv1-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CHTTPParser", providers: [.apt(["libhttp-parser-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),

        .target(name: "Loop", dependencies: ["CUV"]),
        .target(name: "Fetch", dependencies: ["Loop", "CCurl", "CUV"]),

        .executableTarget(
            name: "packd",
            dependencies: [
                "Loop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),

        .executableTarget(
            name: "packd-bench",
            dependencies: [
                "Loop",
                "Fetch",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),

        .testTarget(name: "LoopTests", dependencies: ["Loop"]),
        .testTarget(name: "FetchTests", dependencies: ["Fetch", "Loop", "CZlib"]),
    ],
    swiftLanguageModes: [.v6]
)
