import Fetch
import Packs
import Plan

/// A download's documents come from the upstream with its retries; each answer is kept, to be
/// stored with the fixed resources instead of fetched again.
extension PackDownload: DocumentSource {
    /// A document phase that cannot produce a plan fails the pack with what went wrong.
    static func packError(_ failure: DocumentFailure) -> PackError {
        switch failure {
        case .unavailable(let url, let status, let detail): PackError(.styleUnavailable, detail, url: url, status: status)
        case .unauthorized(let url, let status): PackError(.upstreamUnauthorized, "the upstream refused the request", url: url, status: status)
        case .hostNotAllowed(let url): addressRefused(url)
        case .tooLarge(let url, let detail): PackError(.invalidDocument, detail, url: url)
        case .invalid(let error): PackError(.invalidDocument, error.description, url: error.url)
        case .archive(let failure): failure.packError
        }
    }

    /// The address policy refused the connection: a configuration matter (allow the host), not
    /// something retries fix, so the pack fails at once and says which setting is involved.
    static func addressRefused(_ url: String) -> PackError {
        PackError(.hostNotAllowed, "the upstream's address (or a redirect's) is loopback, private or otherwise not "
                  + "global and no allow rule permits it (address policy: --allow-upstream-hosts)", url: url)
    }

    public func document(_ resource: PlannedResource, then: @escaping (Result<[UInt8], DocumentFailure>) -> Void) {
        resolver.fetch(request(for: resource)) { [weak self] resolution in
            switch resolution {
            case .body(let response):
                self?.documents[resource.url] = response
                then(.success(response.body))
            case .noContent(let status):
                then(.failure(.unavailable(url: resource.url, status: status == 204 ? 404 : status,
                                           detail: "the upstream has no content here")))
            case .notModified(let response):
                then(.failure(.unavailable(url: resource.url, status: response.status, detail: "HTTP \(response.status)")))
            case .unauthorized(let status):
                then(.failure(.unauthorized(url: resource.url, status: status)))
            case .refused:
                then(.failure(.hostNotAllowed(url: resource.url)))
            case .rangeRefused(let error):
                then(.failure(.unavailable(url: resource.url, status: nil, detail: error.description)))
            case .failed(let status, let message, _):
                then(.failure(.unavailable(url: resource.url, status: status, detail: message)))
            case .stopped:
                then(.failure(.unavailable(url: resource.url, status: nil, detail: "stopped")))
            }
        }
    }
}
