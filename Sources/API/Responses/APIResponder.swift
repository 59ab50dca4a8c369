import Server

/// A `Responder` that adds the header fields every answer to one request must carry (CORS today),
/// so a wrapper such as `CORSPolicy.wrap` can decorate answers it does not produce itself: the
/// Server's `Responder` has no hook for that. Loop thread only, like the responder it wraps.
public struct APIResponder {
    public let responder: Responder
    /// Set on every answer, replacing fields of the same name.
    public let headers: HTTPHeaders
    /// Told the status of the answer when it is given (metrics), once per request.
    let observers: [(HTTPStatus) -> Void]

    public init(_ responder: Responder, headers: HTTPHeaders = HTTPHeaders()) {
        self.init(responder, headers: headers, observers: [])
    }

    private init(_ responder: Responder, headers: HTTPHeaders, observers: [(HTTPStatus) -> Void]) {
        self.responder = responder
        self.headers = headers
        self.observers = observers
    }

    public func respond(_ response: HTTPResponse) {
        guard responder.isOpen else { return }
        var response = response
        response.headers = merged(response.headers)
        for observer in observers { observer(response.status) }
        responder.respond(response)
    }

    /// Starts a streaming answer; observers see its status now, as its end may be hours away.
    public func stream(status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders(), contentLength: Int? = nil) -> ResponseStream {
        if responder.isOpen {
            for observer in observers { observer(status) }
        }
        return responder.stream(status: status, headers: merged(headers), contentLength: contentLength)
    }

    /// The same responder with `more` fields added (a later wrapper's headers).
    public func adding(_ more: HTTPHeaders) -> APIResponder {
        APIResponder(responder, headers: merged(more), observers: observers)
    }

    /// The same responder, also reporting the answer's status to `observer`.
    public func observing(_ observer: @escaping (HTTPStatus) -> Void) -> APIResponder {
        APIResponder(responder, headers: headers, observers: observers + [observer])
    }

    private func merged(_ base: HTTPHeaders) -> HTTPHeaders {
        var result = base
        for field in headers { result.set(field.name, field.value) }
        return result
    }
}

/// A handler of the API layer: it answers through an `APIResponder`.
public typealias APIHandler = (HTTPRequest, APIResponder) -> Void
