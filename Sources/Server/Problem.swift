import Foundation

/// An RFC 9457 problem details body (`application/problem+json`): the one error shape every packd
/// endpoint answers with, so clients parse failures one way.
public struct Problem: Error, Codable, Sendable, Equatable {
    /// One invalid input, located by a JSON Pointer (RFC 6901) into the request body.
    public struct FieldError: Codable, Sendable, Equatable {
        public var pointer: String
        public var detail: String

        public init(pointer: String, detail: String) {
            self.pointer = pointer
            self.detail = detail
        }
    }

    public var type: String
    public var title: String
    public var status: Int
    public var detail: String
    public var errors: [FieldError]?

    public init(status: HTTPStatus, detail: String, type: String = "about:blank", title: String? = nil, errors: [FieldError]? = nil) {
        self.type = type
        self.title = title ?? status.reason
        self.status = status.code
        self.detail = detail
        self.errors = errors
    }

    public static let contentType = "application/problem+json"
}

extension HTTPResponse {
    /// A problem response whose status line matches the problem's `status`.
    public static func problem(_ problem: Problem, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        let status = HTTPStatus(problem.status, problem.title)
        var headers = headers
        headers.set("Content-Type", Problem.contentType)
        let body = (try? JSONEncoder.sortedKeys.encode(problem)).map { Array($0) } ?? Array(#"{"status":\#(problem.status)}"#.utf8)
        return HTTPResponse(status: status, headers: headers, body: Array(body))
    }

    /// Shorthand for a problem with the status's own title.
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
