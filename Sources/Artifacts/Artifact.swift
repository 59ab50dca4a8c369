/// A published artifact: an immutable file and what a response says about it.
public struct Artifact: Equatable, Sendable {
    public let key: ArtifactKey
    public let path: String
    public let size: Int
    /// The SHA-256 of the file's bytes, lower-case hex.
    public let sha256: String

    public init(key: ArtifactKey, path: String, size: Int, sha256: String) {
        self.key = key
        self.path = path
        self.size = size
        self.sha256 = sha256
    }

    /// The strong entity tag: the digest itself, quoted.
    public var etag: String { "\"\(sha256)\"" }

    /// RFC 9530's `Repr-Digest` field value: `sha-256=:<base64>:`.
    public var reprDigest: String { "sha-256=:\(Digest.base64(Digest.bytes(hex: sha256))):" }
}
