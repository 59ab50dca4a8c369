import Foundation

/// A complete response: status, header fields and the whole body. Streaming responses use
/// `Responder.stream` instead.
///
/// `Content-Length`, `Connection` and `Date` are written by the server; setting them here has no
/// effect, so a handler cannot produce a response that disagrees with its own framing.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: HTTPStatus, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = []) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    public static func text(_ text: String, status: HTTPStatus = .ok, contentType: String = "text/plain; charset=utf-8") -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": contentType], body: Array(text.utf8))
    }

    /// Encodes `value` with sorted keys. An encoding failure is a server bug, answered as a 500 problem.
    public static func json<T: Encodable>(_ value: T, status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        do {
            let data = try JSONEncoder.sortedKeys.encode(value)
            var headers = headers
            headers.set("Content-Type", "application/json")
            return HTTPResponse(status: status, headers: headers, body: Array(data))
        } catch {
            return .problem(.internalServerError, "response encoding failed")
        }
    }

    /// Ready-made JSON bytes (a constant body), without an encoder round trip.
    public static func json(bytes: [UInt8], status: HTTPStatus = .ok, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = headers
        headers.set("Content-Type", "application/json")
        return HTTPResponse(status: status, headers: headers, body: bytes)
    }
}

extension HTTPRequest {
    /// Decodes the body as JSON. A `Problem` (400 or 415) explains what is wrong, ready to answer.
    public func decodeJSON<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws(Problem) -> T {
        if let contentType = headers["Content-Type"],
           !contentType.lowercased().hasPrefix("application/json") && !contentType.lowercased().contains("+json") {
            throw Problem(.unsupportedMediaType, detail: "expected Content-Type application/json, got \(contentType)")
        }
        do {
            return try decoder.decode(type, from: Data(body))
        } catch let DecodingError.dataCorrupted(context) {
            throw Problem(.malformedRequest, detail: "malformed JSON: \(context.debugDescription)")
        } catch let DecodingError.keyNotFound(key, context) {
            throw Problem(.malformedRequest, detail: "missing field \(Self.pointer(context.codingPath + [key]))")
        } catch let DecodingError.typeMismatch(_, context) {
            throw Problem(.malformedRequest, detail: "wrong type at \(Self.pointer(context.codingPath)): \(context.debugDescription)")
        } catch let DecodingError.valueNotFound(_, context) {
            throw Problem(.malformedRequest, detail: "null at \(Self.pointer(context.codingPath))")
        } catch {
            throw Problem(.malformedRequest, detail: "malformed JSON")
        }
    }

    /// The JSON Pointer (RFC 6901) of a Codable path, for `Problem.FieldError.pointer`.
    public static func pointer(_ path: [any CodingKey]) -> String {
        path.map { key in
            let token = key.intValue.map(String.init) ?? key.stringValue
            return "/" + token.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
        }.joined()
    }
}
