extension Problem {
    /// The problem `type` URNs openapi.yaml defines, each with the one status and title it is
    /// answered with, so no endpoint (the server's own 400/404/408/413/431/503 included) invents a
    /// type or pairs one with the wrong status. The API module names it `ProblemType`.
    public enum Kind: String, CaseIterable, Sendable {
        case malformedRequest = "malformed-request"
        case unauthorized
        case forbidden
        case notFound = "not-found"
        case methodNotAllowed = "method-not-allowed"
        case requestTimeout = "request-timeout"
        case conflict
        case gone
        case idempotencyKeyInUse = "idempotency-key-in-use"
        case payloadTooLarge = "payload-too-large"
        case unsupportedMediaType = "unsupported-media-type"
        case rangeNotSatisfiable = "range-not-satisfiable"
        case expectationFailed = "expectation-failed"
        case validationFailed = "validation-failed"
        case tileLimitExceeded = "tile-limit-exceeded"
        case idempotencyKeyReused = "idempotency-key-reused"
        case hostNotAllowed = "host-not-allowed"
        case headersTooLarge = "headers-too-large"
        case internalError = "internal-error"
        case upstreamFailed = "upstream-failed"
        case unavailable

        public var uri: String { "urn:packd:problem:\(rawValue)" }

        public var status: HTTPStatus {
            switch self {
            case .malformedRequest: .badRequest
            case .unauthorized: .unauthorized
            case .forbidden: .forbidden
            case .notFound: .notFound
            case .methodNotAllowed: .methodNotAllowed
            case .requestTimeout: .requestTimeout
            case .conflict, .idempotencyKeyInUse: .conflict
            case .gone: .gone
            case .payloadTooLarge: .contentTooLarge
            case .unsupportedMediaType: .unsupportedMediaType
            case .rangeNotSatisfiable: .rangeNotSatisfiable
            case .expectationFailed: .expectationFailed
            case .validationFailed, .tileLimitExceeded, .idempotencyKeyReused, .hostNotAllowed: .unprocessableContent
            case .headersTooLarge: .requestHeaderFieldsTooLarge
            case .internalError: .internalServerError
            case .upstreamFailed: .badGateway
            case .unavailable: .serviceUnavailable
            }
        }

        /// A short summary of the type (RFC 9457 `title`): the same for every problem of the type.
        public var title: String {
            switch self {
            case .malformedRequest: "Malformed request"
            case .unauthorized: "Unauthorized"
            case .forbidden: "Forbidden"
            case .notFound: "Not found"
            case .methodNotAllowed: "Method not allowed"
            case .requestTimeout: "Request timeout"
            case .conflict: "Conflict"
            case .gone: "Gone"
            case .idempotencyKeyInUse: "Idempotency key in use"
            case .payloadTooLarge: "Payload too large"
            case .unsupportedMediaType: "Unsupported media type"
            case .rangeNotSatisfiable: "Range not satisfiable"
            case .expectationFailed: "Expectation failed"
            case .validationFailed: "Validation failed"
            case .tileLimitExceeded: "Tile limit exceeded"
            case .idempotencyKeyReused: "Idempotency key reused"
            case .hostNotAllowed: "Host not allowed"
            case .headersTooLarge: "Headers too large"
            case .internalError: "Internal error"
            case .upstreamFailed: "Upstream failed"
            case .unavailable: "Unavailable"
            }
        }

        /// The general kind for a status, for code that only knows the status (`.problem(.notFound, …)`):
        /// the first kind in declaration order, which is the generic one of its status.
        public init?(status: HTTPStatus) {
            guard let kind = Self.allCases.first(where: { $0.status.code == status.code }) else { return nil }
            self = kind
        }
    }

    /// A problem of one of the documented kinds, with that kind's status, URN and title.
    public init(_ kind: Kind, detail: String, errors: [FieldError]? = nil) {
        self.init(status: kind.status, detail: detail, type: kind.uri, title: kind.title, errors: errors)
    }
}
