import ArgumentParser

/// Benchmarks that report packd's numbers beside a baseline measured in the same run
/// (nginx, curl, a bare C loop), so results are ratios rather than absolute claims.
@main
struct PackdBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "packd-bench",
        abstract: "packd benchmarks, each beside a baseline measured in the same run.",
        subcommands: [
            // Each area adds its benchmark command here.
            ServerBenchmark.self,
            ServeTilesBenchmark.self,
            StoreBenchmark.self,
            JSONBenchmark.self,
            ExportBenchmark.self,
            ArtifactsBenchmark.self,
            ResponsivenessBenchmark.self,
            DeltaBenchmark.self,
            GeoBenchmark.self,
            FetchBenchmark.self,
            DownloadBenchmark.self,
            FixtureDownloadBenchmark.self,
            DownloadWANBenchmark.self,
            PMTilesBenchmark.self,
            StartAreaBenchmark.self,
            GlyphsBenchmark.self,
            LabelFixture.self,
            APIBenchmark.self,
            PostgresClientBenchmark.self,
            ClusterBenchmark.self,
            WebhookBenchmark.self,
        ]
    )
}
