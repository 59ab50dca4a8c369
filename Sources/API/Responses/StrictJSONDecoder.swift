import Foundation
import Server

/// Decodes request bodies the way openapi.yaml promises: the declared media type or 415, valid
/// JSON or 400 (`malformed-request`), and JSON that breaks the schema — a wrong type, a missing
/// or null field, a field the type does not know — 422 (`validation-failed`) with a JSON Pointer
/// per problem.
///
/// The body is parsed once (`JSONSerialization`) and the value decoded from the parsed objects
/// (`JSONObjectDecoder`, with `JSONDecoder`'s errors), so a caller that reads more of the body
/// itself (`POST /v1/packs`' region) decodes the rest from the same objects.
///
/// Unknown fields are found by round trip: the decoded value is encoded again and every key of
/// the input that did not survive is one the type ignored. That needs `Codable` types whose
/// `encode(to:)` mirrors `init(from:)` (synthesised conformances do). An optional field sent as
/// `null` is left out of the round trip too, so a key missing there whose value is `null` is
/// probed: decoded again with `{}` in its place, a field of the type fails or comes back, an
/// unknown key is ignored again (`nullProbeLimit` probes a body at most).
public struct StrictJSONDecoder {
    /// Deeper nesting is refused before parsing, so a hostile body cannot exhaust the stack.
    public var maxDepth = 64
    /// Media types accepted (parameters such as `charset` are ignored).
    public var mediaTypes = ["application/json"]
    var decoder = JSONObjectDecoder()
    public var encoder = JSONEncoder()
    /// At most this many unknown fields are listed; the rest are summarised.
    public var maxErrors = 20
    /// Null-valued keys probed per body (no request type has more optional fields than this);
    /// any further one counts as unknown, so a body of many nulls costs no more than this.
    public var nullProbeLimit = 16

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
        let input: Any
        do {
            input = try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw Problem(.malformedRequest, detail: "the body is not valid JSON")
        }
        return try decode(type, fromObject: input)
    }

    /// `T` from a body already parsed by `JSONSerialization` (all of it, or the part of an object
    /// the caller does not read itself), checked as `decode(_:from:)` checks a body.
    public func decode<T: Codable>(_ type: T.Type, fromObject input: Any) throws(Problem) -> T {
        let value: T
        do {
            value = try decoder.decode(type, from: input)
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
        var nullKeys: [[String]] = []
        Self.collectUnknown(input, echoed, path: [], into: &unknown, nullKeys: &nullKeys, limit: maxErrors + 1)
        for (index, key) in nullKeys.enumerated() where unknown.count <= maxErrors {
            if index >= nullProbeLimit || !isField(key, of: type, in: input) { unknown.append(Self.pointer(key)) }
        }
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

    /// Pointers of input keys missing from the re-encoded value; those whose value is `null` go to
    /// `nullKeys` (as key paths) instead, for `isField` to decide.
    private static func collectUnknown(_ input: Any, _ echoed: Any?, path: [String], into result: inout [String],
                                       nullKeys: inout [[String]], limit: Int) {
        guard result.count < limit else { return }
        if let object = input as? [String: Any] {
            let known = echoed as? [String: Any]
            for (key, value) in object.sorted(by: { $0.key < $1.key }) {
                guard let echoedValue = known?[key] else {
                    if value is NSNull { nullKeys.append(path + [key]) } else { result.append(pointer(path + [key])) }
                    if result.count >= limit { return }
                    continue
                }
                collectUnknown(value, echoedValue, path: path + [key], into: &result, nullKeys: &nullKeys, limit: limit)
            }
        } else if let array = input as? [Any], let echoedArray = echoed as? [Any] {
            for (index, element) in array.enumerated() where index < echoedArray.count {
                collectUnknown(element, echoedArray[index], path: path + [String(index)], into: &result, nullKeys: &nullKeys, limit: limit)
            }
        }
    }

    /// Whether the `null`-valued key at `path` is a field of `type`: decoded with `{}` there
    /// instead, a field fails at that key (a scalar, an array, a struct with required fields) or
    /// comes back in the round trip (a struct of optionals, a dictionary); an unknown key is
    /// ignored again.
    private func isField<T: Codable>(_ path: [String], of type: T.Type, in input: Any) -> Bool {
        let probe = Self.replacing(path[...], in: input, with: [String: Any]())
        do {
            let value = try decoder.decode(type, from: probe)
            let echoed = try JSONSerialization.jsonObject(with: encoder.encode(value), options: [.fragmentsAllowed])
            return Self.value(at: path[...], in: echoed) != nil
        } catch let error as DecodingError {
            let codingPath: [any CodingKey]
            switch error {
            case .keyNotFound(_, let context), .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
                codingPath = context.codingPath
            @unknown default:
                return true
            }
            let keys = codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }
            return keys.starts(with: path)
        } catch {
            return false
        }
    }

    private static func replacing(_ path: ArraySlice<String>, in node: Any, with replacement: Any) -> Any {
        guard let key = path.first else { return replacement }
        if var object = node as? [String: Any], let child = object[key] {
            object[key] = replacing(path.dropFirst(), in: child, with: replacement)
            return object
        }
        if var array = node as? [Any], let index = Int(key), array.indices.contains(index) {
            array[index] = replacing(path.dropFirst(), in: array[index], with: replacement)
            return array
        }
        return node
    }

    private static func value(at path: ArraySlice<String>, in node: Any) -> Any? {
        guard let key = path.first else { return node }
        if let object = node as? [String: Any], let child = object[key] { return value(at: path.dropFirst(), in: child) }
        if let array = node as? [Any], let index = Int(key), array.indices.contains(index) {
            return value(at: path.dropFirst(), in: array[index])
        }
        return nil
    }

    private static func pointer(_ path: [String]) -> String {
        path.map { "/" + $0.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1") }.joined()
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
