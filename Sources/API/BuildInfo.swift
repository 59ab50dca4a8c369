/// What this binary is: packd's version and, when the build recorded it, the git commit.
/// `/metrics` exports both as the `packd_build_info` gauge.
public enum BuildInfo {
    public static let version = "0.2.0"

    /// Nil for a plain `swift build`; docker/Dockerfile rewrites `BuildCommit.swift` from its
    /// `PACKD_COMMIT` build argument.
    public static var commit: String? { buildCommit.isEmpty ? nil : buildCommit }
}
