/// Why an artifact could not be had. `build` carries the exporter's own error unchanged, so the
/// API can answer what the client got wrong (a 4xx) apart from what failed on the server.
public enum ArtifactError: Error, CustomStringConvertible {
    /// Reading, writing, syncing or renaming in the artifacts directory failed.
    case file(String)
    /// The export itself failed or refused.
    case build(any Error)
    /// More distinct artifacts are waiting to be built than the queue holds.
    case queueFull(Int)

    public var description: String {
        switch self {
        case .file(let message): message
        case .build(let error): "building the artifact failed: \(error)"
        case .queueFull(let limit): "\(limit) artifacts are already waiting to be built"
        }
    }
}
