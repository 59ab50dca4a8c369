/// One libFuzzer target: untrusted bytes in, and the code under test must answer without
/// crashing, hanging or breaking the invariants each target checks (a broken invariant traps,
/// which libFuzzer reports like a crash).
enum FuzzTarget: String, CaseIterable {
    /// Raw bytes on a connection to an `HTTPServer` with small limits.
    case httpRequest = "http-request"
    /// A region object in the API's and in MapLibre's form (bounds, GeoJSON, templates).
    case region
    /// A style document, then a TileJSON, through `PlanBuilder`.
    case style
    /// An uploaded file checked as a MapLibre offline database.
    case importDatabase = "import"
    /// PMTiles headers, vector tiles and gzip/zlib bodies as the export and store read them.
    case tileReaders = "tile-readers"
    /// Vector tiles and symbol layers through glyph subsetting's label analysis.
    case labels
    /// A whole upstream response (status line, headers, body) received by the `Fetcher`.
    case upstreamResponse = "upstream-response"

    static var allNames: String { allCases.map(\.rawValue).joined(separator: ", ") }

    func run(_ bytes: [UInt8]) {
        switch self {
        case .httpRequest: HTTPRequestTarget.shared.run(bytes)
        case .region: RegionTarget.run(bytes)
        case .style: StyleTarget.run(bytes)
        case .importDatabase: ImportTarget.run(bytes)
        case .tileReaders: TileReadersTarget.run(bytes)
        case .upstreamResponse: UpstreamResponseTarget.shared.run(bytes)
        case .labels: LabelsTarget.run(bytes)
        }
    }
}

/// Stops the run with a message libFuzzer shows beside the crashing input.
func invariant(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError("invariant broken: \(message())") }
}
