import ArgumentParser
import Foundation
import Logging
import Loop
import Server

/// `packd serve`: runs the HTTP API on the main thread's event loop until SIGTERM or SIGINT.
struct ServeCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Run the packd HTTP API. Every option can also be set as PACKD_<NAME> (the flag wins)."
    )

    /// Raw option text: parsing and validation happen in `ServerConfiguration`, once for flags
    /// and environment alike, so both produce the same messages.
    struct Options: ParsableArguments {
        @Option(help: "Address to listen on: host:port or [ipv6]:port (PACKD_LISTEN; default 127.0.0.1:8080).")
        var listen: String?
        @Option(help: "SQLite database path, or postgresql://user@host:port/db for cluster mode: every node on that database shares the packs (PACKD_DATABASE; default ./packd.sqlite).")
        var database: String?
        @Option(help: "SQLite page size in bytes of a database packd creates, a power of two from 512 to 65536; an existing file keeps its own (PACKD_DATABASE_PAGE_SIZE; default 16384).")
        var databasePageSize: String?
        @Option(help: "Versions kept per pack; older ones are no longer retained, their exports gone (PACKD_KEEP_VERSIONS; default 3).")
        var keepVersions: String?
        @Option(help: "Directory of the immutable export artifacts of pack versions (PACKD_ARTIFACTS_DIR; default: beside the SQLite database, <name>-artifacts; in cluster mode ./packd-artifacts, one per node).")
        var artifactsDir: String?
        @Option(help: "Byte budget of the artifacts directory; least recently used artifacts are removed beyond it (PACKD_ARTIFACTS_MAX_BYTES; default unlimited).")
        var artifactsMaxBytes: String?
        @Option(help: "Cluster mode: how long a node's claim of a work unit lasts without a heartbeat, e.g. 30s (PACKD_CLUSTER_LEASE; default 30s).")
        var clusterLease: String?
        @Option(help: "Cluster mode: tiles per work unit a pack is cut into (PACKD_CLUSTER_UNIT_TILES; default 4096).")
        var clusterUnitTiles: String?
        @Option(help: "trace, debug, info, notice, warning, error or critical (PACKD_LOG_LEVEL; default info).")
        var logLevel: String?
        @Option(help: "text or json (JSON lines) (PACKD_LOG_FORMAT; default text).")
        var logFormat: String?
        @Option(help: "Path of the openapi.yaml served at /openapi.yaml (PACKD_OPENAPI; default ./openapi.yaml).")
        var openapi: String?
        @Option(help: "Write the bound port to this file once listening (PACKD_PORT_FILE).")
        var portFile: String?
        @Option(help: "Maximum open connections; more get 503 (PACKD_MAX_CONNECTIONS; default 4096).")
        var maxConnections: String?
        @Option(help: "Maximum request head size in bytes; more gets 431 (PACKD_MAX_HEADER_BYTES; default 16384).")
        var maxHeaderBytes: String?
        @Option(help: "Maximum request body size in bytes; more gets 413 (PACKD_MAX_BODY_BYTES; default 1048576).")
        var maxBodyBytes: String?
        @Option(help: "Requests read ahead of their responses per connection (PACKD_MAX_PIPELINED_REQUESTS; default 32).")
        var maxPipelinedRequests: String?
        @Option(help: "Time to receive a request head, e.g. 10s (PACKD_HEADER_TIMEOUT).")
        var headerTimeout: String?
        @Option(help: "Longest pause while receiving a body, e.g. 30s (PACKD_BODY_TIMEOUT).")
        var bodyTimeout: String?
        @Option(help: "Idle keep-alive connections are closed after this, e.g. 60s (PACKD_IDLE_TIMEOUT).")
        var idleTimeout: String?
        @Option(help: "A response making no write progress this long is dropped, e.g. 60s (PACKD_WRITE_TIMEOUT).")
        var writeTimeout: String?
        @Option(help: "A handler not answering this long after its request is read gets 503, e.g. 60s (PACKD_HANDLER_TIMEOUT).")
        var handlerTimeout: String?
        @Option(help: "How long shutdown waits for responses in flight, e.g. 10s (PACKD_SHUTDOWN_GRACE).")
        var shutdownGrace: String?
        @Option(help: "File of role:key API keys, one a line (PACKD_API_KEYS_FILE; keys also from PACKD_API_KEYS). Without keys only loopback addresses may be used.")
        var apiKeysFile: String?
        @Option(help: "Origins allowed by CORS: * or a comma-separated list of http(s) origins (PACKD_CORS_ORIGINS; default none).")
        var corsOrigins: String?
        @Option(help: "Base URL clients reach packd at, for the URLs in offline style.json and TileJSON, e.g. https://maps.example.org/packd (PACKD_PUBLIC_URL; default: http:// and the request's Host).")
        var publicURL: String?
        @Option(help: "Upstream hosts or CIDRs allowed although private or loopback, comma-separated (PACKD_ALLOW_UPSTREAM_HOSTS; default none).")
        var allowUpstreamHosts: String?
        @Option(help: "Packs downloading at once; the others wait queued (PACKD_MAX_ACTIVE_PACKS; default 2).")
        var maxActivePacks: String?
        @Option(help: "Upstream transfers in flight at once, over all hosts (PACKD_MAX_TRANSFERS; default 512).")
        var maxTransfers: String?
        @Option(help: "Cap on upstream transfers in flight to one host; below it the limit still adapts (PACKD_MAX_TRANSFERS_PER_HOST; default: adaptive, from 8 up to 128 on HTTP/1.1 and 100 on HTTP/2). In cluster mode the whole cluster's cap, shared out between the live nodes (default 16).")
        var maxTransfersPerHost: String?
        @Option(help: "Upstream transfers one pack keeps under way, waiting for its hosts' limits or in flight (PACKD_MAX_TRANSFERS_PER_PACK; default 160).")
        var maxTransfersPerPack: String?
        @Option(help: "New requests per second to one upstream host, e.g. 20 (PACKD_REQUESTS_PER_SECOND_PER_HOST; default unlimited).")
        var requestsPerSecondPerHost: String?
        @Option(help: "Attempts per resource, the first included (PACKD_RETRY_ATTEMPTS; default 5).")
        var retryAttempts: String?
        @Option(help: "First retry delay, doubled per attempt with jitter, e.g. 200ms (PACKD_RETRY_INITIAL_BACKOFF; default 200ms).")
        var retryInitialBackoff: String?
        @Option(help: "Longest retry delay, e.g. 30s (PACKD_RETRY_MAX_BACKOFF; default 30s).")
        var retryMaxBackoff: String?
        @Option(help: "Share of a pack's resources that may fail before it stops as too_many_failures, 0 to 1 (PACKD_MAX_FAILURE_SHARE; default 0.05).")
        var maxFailureShare: String?
        @Option(help: "Largest upstream body accepted per resource, in bytes (PACKD_MAX_RESOURCE_BYTES; default 33554432).")
        var maxResourceBytes: String?
        @Option(help: "PMTiles archives: tiles whose bytes lie at most this many bytes apart are read with one range request (PACKD_ARCHIVE_MAX_GAP; default 65536).")
        var archiveMaxGap: String?
        @Option(help: "PMTiles archives: the largest range one request reads, in bytes (PACKD_ARCHIVE_MAX_RANGE; default 1048576).")
        var archiveMaxRange: String?
        @Option(help: "PMTiles archives: bytes of tile ranges one pack has under way at once (PACKD_ARCHIVE_BYTES_IN_FLIGHT; default 8388608, at least twice --archive-max-range).")
        var archiveBytesInFlight: String?
        @Option(help: "Time to connect to an upstream, e.g. 10s (PACKD_UPSTREAM_CONNECT_TIMEOUT; default 10s).")
        var upstreamConnectTimeout: String?
        @Option(help: "An upstream transfer receiving nothing this long fails, e.g. 30s (PACKD_UPSTREAM_STALL_TIMEOUT; default 30s).")
        var upstreamStallTimeout: String?
        @Option(help: "Longest upstream request, e.g. 2m (PACKD_UPSTREAM_TIMEOUT; default 2m).")
        var upstreamTimeout: String?
        @Option(help: "JSON file of upstream rules for URLs starting with a prefix: headers or query parameters (credentials), a rewritten base, and the host's max_transfers, requests_per_second and adaptive (PACKD_UPSTREAM_RULES_FILE; default none).")
        var upstreamRulesFile: String?
        @Option(help: "PEM file of CA certificates trusted for upstream HTTPS in addition to the system's, for private tile servers (PACKD_UPSTREAM_CA_FILE; default none).")
        var upstreamCaFile: String?
        @Option(help: "Interval of the heartbeat comment on event streams, e.g. 15s (PACKD_EVENT_HEARTBEAT; default 15s).")
        var eventHeartbeat: String?
        @Option(help: "Serve the dashboard at / and /dashboard/: true or false (PACKD_DASHBOARD; default true).")
        var dashboard: String?
        @Option(help: "Directory of the dashboard page, index.html and its modules (PACKD_DASHBOARD_DIR; default: dashboard/ in the working directory, the repository or <prefix>/share/packd).")
        var dashboardDir: String?
        @Option(help: "Directory holding maplibre-gl.js and maplibre-gl.css for the dashboard's maps (PACKD_MAP_LIBRARY_DIR; default: maplibre-gl/ found as the dashboard is, filled by `make dashboard-assets`; without it the dashboard has no maps).")
        var mapLibraryDir: String?
        @Option(help: "How long a webhook delivery is retried before it fails, e.g. 3d or 12h (PACKD_WEBHOOK_MAX_AGE; default 3d).")
        var webhookMaxAge: String?
        @Flag(help: .hidden)
        var debugRoutes = false
    }

    @OptionGroup var options: Options

    func run() throws {
        let configuration: ServerConfiguration
        do {
            configuration = try ServerConfiguration(options: options, environment: ProcessInfo.processInfo.environment)
        } catch {
            FileHandle.standardError.write(Data("packd: \(error)\n".utf8))
            throw ExitCode(64)
        }
        try ServerProcess(configuration: configuration).run()
    }
}
