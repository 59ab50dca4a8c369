import Server

/// The problem `type` URNs openapi.yaml defines, each with the one status it is answered with, so
/// no endpoint invents a type or pairs one with the wrong status.
public enum ProblemType: String, CaseIterable, Sendable {
    case malformedRequest = "malformed-request"
    case unauthorized
    case forbidden
    case notFound = "not-found"
    case methodNotAllowed = "method-not-allowed"
    case requestTimeout = "request-timeout"
    case conflict
    case idempotencyKeyInUse = "idempotency-key-in-use"
    case payloadTooLarge = "payload-too-large"
    case unsupportedMediaType = "unsupported-media-type"
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
        case .payloadTooLarge: .contentTooLarge
        case .unsupportedMediaType: .unsupportedMediaType
        case .validationFailed, .tileLimitExceeded, .idempotencyKeyReused, .hostNotAllowed: .unprocessableContent
        case .headersTooLarge: .requestHeaderFieldsTooLarge
        case .internalError: .internalServerError
        case .upstreamFailed: .badGateway
        case .unavailable: .serviceUnavailable
        }
    }
}

extension Problem {
    /// A problem of one of the documented types, with that type's status and title.
    public init(_ type: ProblemType, detail: String, errors: [FieldError]? = nil) {
        self.init(status: type.status, detail: detail, type: type.uri, errors: errors)
    }
}
