import Server

/// A `Responder` that adds the header fields every answer to one request must carry (CORS today),
/// so a wrapper such as `CORSPolicy.wrap` can decorate answers it does not produce itself: the
/// Server's `Responder` has no hook for that. Loop thread only, like the responder it wraps.
public struct APIResponder {
    public let responder: Responder
    /// Set on every answer, replacing fields of the same name.
    public let headers: HTTPHeaders

    public init(_ responder: Responder, headers: HTTPHeaders = HTTPHeaders()) {
        self.responder = responder
        self.headers = headers
    }

    public func respond(_ response: HTTPResponse) {
        var response = response
        response.headers = merged(response.headers)
        responder.respond(response)
    }

    public func stream(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil) -> ResponseStream {
        responder.stream(status: status, headers: merged(headers), contentLength: contentLength)
    }

    /// The same responder with `more` fields added (a later wrapper's headers).
    public func adding(_ more: HTTPHeaders) -> APIResponder {
        APIResponder(responder, headers: merged(more))
    }

    private func merged(_ base: HTTPHeaders) -> HTTPHeaders {
        var result = base
        for field in headers { result.set(field.name, field.value) }
        return result
    }
}

/// A handler of the API layer: it answers through an `APIResponder`.
public typealias APIHandler = (HTTPRequest, APIResponder) -> Void
