import Foundation
import Server

/// Decodes request bodies the way openapi.yaml promises: the declared media type or 415, valid
/// JSON or 400 (`malformed-request`), and JSON that breaks the schema — a wrong type, a missing
/// or null field, a field the type does not know — 422 (`validation-failed`) with a JSON Pointer
/// per problem.
///
/// Unknown fields are found by round trip: the decoded value is encoded again and every key of
/// the input that did not survive is one the type ignored. That needs `Codable` types whose
/// `encode(to:)` mirrors `init(from:)` (synthesised conformances do). A key whose value is `null`
/// is treated as absent, since an optional field encodes nil by omission.
public struct StrictJSONDecoder {
    /// Deeper nesting is refused before parsing, so a hostile body cannot exhaust the stack.
    public var maxDepth = 64
    /// Media types accepted (parameters such as `charset` are ignored).
    public var mediaTypes = ["application/json"]
    public var decoder = JSONDecoder()
    public var encoder = JSONEncoder()
    /// At most this many unknown fields are listed; the rest are summarised.
    public var maxErrors = 20

    public init() {}

    /// The request's body as `T`, or the problem to answer with.
    public func decode<T: Codable>(_ type: T.Type, from request: HTTPRequest) throws(Problem) -> T {
        try checkContentType(request.headers["Content-Type"])
        return try decode(type, from: request.body)
    }

    public func checkContentType(_ value: String?) throws(Problem) {
        guard let value else {
            throw Problem(.unsupportedMediaType, detail: "Content-Type is missing; expected \(mediaTypes.joined(separator: " or "))")
        }
        let mediaType = value.split(separator: ";", maxSplits: 1).first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
        guard mediaTypes.contains(mediaType) else {
            throw Problem(.unsupportedMediaType, detail: "Content-Type \(mediaType.prefix(100)) is not accepted; expected \(mediaTypes.joined(separator: " or "))")
        }
    }

    public func decode<T: Codable>(_ type: T.Type, from body: [UInt8]) throws(Problem) -> T {
        guard !body.isEmpty else { throw Problem(.malformedRequest, detail: "the request needs a JSON body") }
        guard Self.nestingDepth(body, limit: maxDepth) <= maxDepth else {
            throw Problem(.malformedRequest, detail: "the JSON body is nested deeper than \(maxDepth) levels")
        }
        let data = Data(body)
        let input: Any
        do {
            input = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
        } catch {
            throw Problem(.malformedRequest, detail: "the body is not valid JSON")
        }
        let value: T
        do {
            value = try decoder.decode(type, from: data)
        } catch let error as DecodingError {
            throw Self.problem(for: error)
        } catch {
            throw Problem(.validationFailed, detail: "the body does not match the expected schema")
        }
        let echoed: Any
        do {
            echoed = try JSONSerialization.jsonObject(with: encoder.encode(value), options: [.fragmentsAllowed])
        } catch {
            throw Problem(.internalError, detail: "the decoded body could not be re-encoded")
        }
        var unknown: [String] = []
        Self.collectUnknown(input, echoed, path: "", into: &unknown, limit: maxErrors + 1)
        guard unknown.isEmpty else {
            var errors = unknown.prefix(maxErrors).map { Problem.FieldError(pointer: $0, detail: "unknown field") }
            if unknown.count > maxErrors {
                errors.append(Problem.FieldError(pointer: "", detail: "more unknown fields"))
            }
            throw Problem(.validationFailed, detail: "the body has fields that are not in the schema", errors: errors)
        }
        return value
    }

    /// A 422 problem pointing at the field a `DecodingError` is about.
    static func problem(for error: DecodingError) -> Problem {
        let (pointer, detail): (String, String)
        switch error {
        case .keyNotFound(let key, let context):
            (pointer, detail) = (HTTPRequest.pointer(context.codingPath + [key]), "required field is missing")
        case .typeMismatch(let expected, let context):
            (pointer, detail) = (HTTPRequest.pointer(context.codingPath), "expected \(describe(expected))")
        case .valueNotFound(let expected, let context):
            (pointer, detail) = (HTTPRequest.pointer(context.codingPath), "expected \(describe(expected)), not null")
        case .dataCorrupted(let context):
            (pointer, detail) = (HTTPRequest.pointer(context.codingPath), context.debugDescription)
        @unknown default:
            (pointer, detail) = ("", "does not match the schema")
        }
        return Problem(.validationFailed, detail: "the body does not match the schema", errors: [Problem.FieldError(pointer: pointer, detail: detail)])
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Bool.Type: "a boolean"
        case is Int.Type, is Int64.Type, is Int32.Type, is UInt.Type, is UInt64.Type, is UInt32.Type: "an integer in range"
        case is Double.Type, is Float.Type: "a number"
        default: String(describing: type).hasPrefix("Array") ? "an array" : (String(describing: type).hasPrefix("Dictionary") ? "an object" : "a value of the right type")
        }
    }

    /// Pointers of input keys missing from the re-encoded value.
    private static func collectUnknown(_ input: Any, _ echoed: Any?, path: String, into result: inout [String], limit: Int) {
        guard result.count < limit else { return }
        if let object = input as? [String: Any] {
            let known = echoed as? [String: Any]
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                let pointer = path + "/" + key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
                guard let echoedValue = known?[key] else {
                    if !(value is NSNull) { result.append(pointer) }
                    if result.count >= limit { return }
                    continue
                }
                collectUnknown(value, echoedValue, path: pointer, into: &result, limit: limit)
            }
        } else if let array = input as? [Any], let echoedArray = echoed as? [Any] {
            for (index, element) in array.enumerated() where index < echoedArray.count {
                collectUnknown(element, echoedArray[index], path: "\(path)/\(index)", into: &result, limit: limit)
            }
        }
    }

    /// The deepest bracket nesting outside strings, counting stops just past `limit`.
    static func nestingDepth(_ bytes: [UInt8], limit: Int) -> Int {
        var depth = 0
        var deepest = 0
        var inString = false
        var escaped = false
        for byte in bytes {
            if inString {
                if escaped { escaped = false } else if byte == UInt8(ascii: "\\") { escaped = true } else if byte == UInt8(ascii: "\"") { inString = false }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                deepest = max(deepest, depth)
                if deepest > limit { return deepest }
            case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
            default: break
            }
        }
        return deepest
    }
}
