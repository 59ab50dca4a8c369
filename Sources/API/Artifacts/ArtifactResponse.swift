import Artifacts
import Server

/// Sends an artifact as a CDN would: strong `ETag` and `Repr-Digest` from its SHA-256,
/// `Accept-Ranges`, single ranges (`206`, `416` with `Content-Range: bytes */size`), `If-Range`,
/// `If-None-Match` (`304`). The body goes from the file to the socket through the server's file
/// streamer (positional reads into one small buffer per download); the cache is told while the
/// file is being sent, so eviction leaves it alone.
struct ArtifactResponse {
    let artifact: Artifact
    /// `public, max-age=31536000, immutable` for a versioned URL; `no-cache` for the current one.
    let cacheControl: String
    let fileName: String
    /// The versioned URL, on answers from the current-version route.
    let contentLocation: String?

    static let immutable = "public, max-age=31536000, immutable"
    static let revalidate = "no-cache"

    var validators: HTTPHeaders {
        var headers: HTTPHeaders = ["ETag": artifact.etag, "Cache-Control": cacheControl]
        if let contentLocation { headers.set("Content-Location", contentLocation) }
        return headers
    }

    func send(_ request: HTTPRequest, _ responder: APIResponder, cache: ArtifactCache) {
        var headers = validators
        headers.set("Repr-Digest", artifact.reprDigest)
        headers.set("Accept-Ranges", "bytes")
        switch ImmutableFileAnswer.decide(method: request.method, headers: request.headers, etag: artifact.etag, size: artifact.size) {
        case .notModified:
            responder.respond(HTTPResponse(status: .notModified, headers: validators))
        case .unsatisfiable:
            headers.set("Content-Range", ImmutableFileAnswer.unsatisfiedRange(size: artifact.size))
            responder.respond(Problem(.rangeNotSatisfiable, detail: "the artifact has \(artifact.size) bytes; the range asked for starts past them"),
                              headers: headers)
        case .whole:
            stream(headers, status: .ok, range: nil, responder, cache)
        case .partial(let bytes):
            headers.set("Content-Range", ImmutableFileAnswer.contentRange(bytes, size: artifact.size))
            stream(headers, status: .partialContent, range: bytes, responder, cache)
        }
    }

    private func stream(_ headers: HTTPHeaders, status: HTTPStatus, range: Range<Int>?, _ responder: APIResponder, _ cache: ArtifactCache) {
        var headers = headers
        headers.set("Content-Type", artifact.key.format.contentType)
        headers.set("Content-Disposition", "attachment; filename=\"\(fileName)\"")
        cache.beginServing(artifact)
        let artifact = artifact
        responder.respondWithFile(path: artifact.path, status: status, headers: headers, range: range) { _ in
            cache.endServing(artifact)
        }
    }
}
