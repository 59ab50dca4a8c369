/// A response status code with its reason phrase, so the status line is never assembled from a
/// bare number in the hot path.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public let code: Int
    public let reason: String

    public init(_ code: Int, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    /// Whether a response with this status may carry a body (RFC 9110 §6.4.1).
    public var allowsBody: Bool { code >= 200 && code != 204 && code != 304 }

    public var description: String { "\(code) \(reason)" }

    /// The statuses packd answers with, so a status line built from a bare code (a `Problem`'s
    /// `status`) still carries the standard reason phrase rather than a problem title.
    static let known: [Int: HTTPStatus] = Dictionary(uniqueKeysWithValues: [
        HTTPStatus.continue, .ok, .created, .accepted, .noContent, .partialContent, .notModified, .badRequest, .unauthorized,
        .forbidden, .notFound, .methodNotAllowed, .requestTimeout, .conflict, .gone, .preconditionFailed,
        .contentTooLarge, .unsupportedMediaType, .rangeNotSatisfiable, .expectationFailed, .unprocessableContent, .tooManyRequests,
        .requestHeaderFieldsTooLarge, .internalServerError, .notImplemented, .badGateway, .serviceUnavailable,
        .gatewayTimeout,
    ].map { ($0.code, $0) })

    public static let `continue` = HTTPStatus(100, "Continue")
    public static let ok = HTTPStatus(200, "OK")
    public static let created = HTTPStatus(201, "Created")
    public static let accepted = HTTPStatus(202, "Accepted")
    public static let noContent = HTTPStatus(204, "No Content")
    public static let partialContent = HTTPStatus(206, "Partial Content")
    public static let notModified = HTTPStatus(304, "Not Modified")
    public static let badRequest = HTTPStatus(400, "Bad Request")
    public static let unauthorized = HTTPStatus(401, "Unauthorized")
    public static let forbidden = HTTPStatus(403, "Forbidden")
    public static let notFound = HTTPStatus(404, "Not Found")
    public static let methodNotAllowed = HTTPStatus(405, "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(408, "Request Timeout")
    public static let conflict = HTTPStatus(409, "Conflict")
    public static let gone = HTTPStatus(410, "Gone")
    public static let preconditionFailed = HTTPStatus(412, "Precondition Failed")
    public static let contentTooLarge = HTTPStatus(413, "Content Too Large")
    public static let unsupportedMediaType = HTTPStatus(415, "Unsupported Media Type")
    public static let rangeNotSatisfiable = HTTPStatus(416, "Range Not Satisfiable")
    public static let expectationFailed = HTTPStatus(417, "Expectation Failed")
    public static let unprocessableContent = HTTPStatus(422, "Unprocessable Content")
    public static let tooManyRequests = HTTPStatus(429, "Too Many Requests")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(431, "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(500, "Internal Server Error")
    public static let notImplemented = HTTPStatus(501, "Not Implemented")
    public static let badGateway = HTTPStatus(502, "Bad Gateway")
    public static let serviceUnavailable = HTTPStatus(503, "Service Unavailable")
    public static let gatewayTimeout = HTTPStatus(504, "Gateway Timeout")
}
