import Foundation

/// An RFC 9457 problem details body (`application/problem+json`): the one error shape every packd
/// endpoint answers with, so clients parse failures one way.
public struct Problem: Error, Codable, Sendable, Equatable {
    /// One invalid input, located either by a JSON Pointer (RFC 6901) into the request body or by
    /// the name of the query parameter or header concerned (openapi's `ProblemItem`).
    public struct FieldError: Codable, Sendable, Equatable {
        public var pointer: String?
        public var parameter: String?
        public var detail: String

        /// A problem in the request body, at `pointer`.
        public init(pointer: String, detail: String) {
            self.pointer = pointer
            self.detail = detail
        }

        /// A problem in a query parameter or header, named by `parameter`.
        public init(parameter: String, detail: String) {
            self.parameter = parameter
            self.detail = detail
        }
    }

    public var type: String
    public var title: String
    public var status: Int
    public var detail: String
    public var errors: [FieldError]?

    /// Without an explicit `type`, the generic `Kind` of the status supplies type and title, so
    /// code that only knows a status still answers with a documented URN; `about:blank` is left
    /// only for statuses openapi.yaml has no kind for.
    public init(status: HTTPStatus, detail: String, type: String? = nil, title: String? = nil, errors: [FieldError]? = nil) {
        let kind = Kind(status: status)
        self.type = type ?? kind?.uri ?? "about:blank"
        self.title = title ?? (type == nil ? kind?.title : nil) ?? status.reason
        self.status = status.code
        self.detail = detail
        self.errors = errors
    }

    public static let contentType = "application/problem+json"
}

extension HTTPResponse {
    /// A problem response whose status line matches the problem's `status`.
    public static func problem(_ problem: Problem, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        let status = HTTPStatus.known[problem.status] ?? HTTPStatus(problem.status, problem.title)
        var headers = headers
        headers.set("Content-Type", Problem.contentType)
        let body = (try? JSONEncoder.sortedKeys.encode(problem)).map { Array($0) } ?? Array(#"{"status":\#(problem.status)}"#.utf8)
        return HTTPResponse(status: status, headers: headers, body: Array(body))
    }

    /// Shorthand for a problem with the status's generic kind.
    public static func problem(_ status: HTTPStatus, _ detail: String, errors: [Problem.FieldError]? = nil) -> HTTPResponse {
        problem(Problem(status: status, detail: detail, errors: errors))
    }
}

extension JSONEncoder {
    /// Stable key order keeps bodies diffable and ETags reproducible.
    static var sortedKeys: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
