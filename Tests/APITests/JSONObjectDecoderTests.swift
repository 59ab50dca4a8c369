import Foundation
import Packs
import Server
import Testing
@testable import API

/// The body is parsed once and decoded from the parsed objects: every value and every error
/// must be what `JSONDecoder` gives for the same JSON — decoding the body's bytes (the storage
/// endpoints did), or (`POST /v1/packs`' settings did) the parsed objects written out again.
@Suite struct JSONObjectDecoderTests {
    struct Nested: Codable, Equatable {
        var count: Int
        var ratio: Double?
    }

    /// Every shape a request type has: scalars, optionals, arrays, nested objects.
    struct Everything: Codable, Equatable {
        var text: String
        var flag: Bool?
        var big: Int64?
        var small: Int32?
        var real: Double?
        var single: Float?
        var list: [Double]?
        var nested: Nested?
        var nestedList: [Nested]?
        var required: Nested
    }

    /// What a decode came to, comparable across decoders: the value, or the problem answered.
    enum Outcome: Equatable {
        case value(String)
        case problem(Problem.FieldError)
    }

    func outcome<T: Codable>(_ decode: () throws -> T) -> Outcome {
        do {
            let value = try decode()
            return .value(String(decoding: try! SortedJSONEncoder.encode(value), as: UTF8.self))
        } catch let error as DecodingError {
            return .problem(StrictJSONDecoder.problem(for: error).errors![0])
        } catch {
            Issue.record("not a DecodingError: \(error)")
            return .problem(.init(pointer: "?", detail: "\(error)"))
        }
    }

    static let values = [
        #""a""#, #""""#, "true", "false", "null", "[]", "{}", "[1]", #"{"count":1}"#, #"[{"count":2,"ratio":0.5}]"#,
        "0", "-0", "1", "-1", "1.0", "1.5", "-2.5", "1e3", "1E2", "0.1e1", "100e-2", "2.5e-1", "1e30", "-1e30",
        "2147483647", "2147483648", "-2147483649", "9223372036854775807", "9223372036854775808",
        "-9223372036854775808", "-9223372036854775809", "9007199254740993", "18446744073709551616", "1e-400",
        #"[1,"x"]"#, #"[1,null]"#, #"[{"count":"x"}]"#, #"{"count":1.5}"#, #"{"count":null}"#, #"{"ratio":1}"#,
    ]

    /// Each field of `Everything` takes each value (or is left out), the others valid.
    static var bodies: [String] {
        let valid: [(String, String)] = [("text", #""t""#), ("required", #"{"count":3}"#)]
        let fields = ["text", "flag", "big", "small", "real", "single", "list", "nested", "nestedList", "required"]
        var bodies: [String] = []
        for field in fields {
            for value in values + [nil] {
                var members = valid.filter { $0.0 != field }
                if let value { members.append((field, value)) }
                bodies.append("{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}")
            }
        }
        return bodies + ["null", "[]", "1", #""x""#, "true"]
    }

    /// `-0` and a number too small for a `Double` differ for floating-point fields (see
    /// `JSONObjectDecoder`): no request type has one, so the corpus leaves those two out for them.
    static let floatingPointExceptions = ["-0", "1e-400"].flatMap { value in
        ["real", "single"].map { #""\#($0)":\#(value)"# } + [#""ratio":\#(value)"#]
    }

    @Test func decodesAsJSONDecoderDecodesTheBytes() throws {
        for body in Self.bodies where !Self.floatingPointExceptions.contains(where: body.contains) {
            let data = Data(body.utf8)
            let parsed = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            let expected = outcome { try JSONDecoder().decode(Everything.self, from: data) }
            let found = outcome { try JSONObjectDecoder().decode(Everything.self, from: parsed) }
            #expect(found == expected, "\(body)")
        }
    }

    @Test func decodesPackSettingsAsTheRewrittenObjectsDecoded() throws {
        let fields = ["context", "name", "start", "limits"]
        let limits = ["max_tiles", "max_bytes_per_second"]
        var bodies: [String] = []
        for value in Self.values {
            bodies += fields.map { #"{"\#($0)":\#(value)}"# }
            bodies += limits.map { #"{"limits":{"\#($0)":\#(value)}}"# }
        }
        for body in bodies {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
            let rewritten = try JSONSerialization.data(withJSONObject: object)
            let expected = outcome { try JSONDecoder().decode(PackCreation.Settings.self, from: rewritten) }
            let found = outcome { try JSONObjectDecoder().decode(PackCreation.Settings.self, from: object) }
            #expect(found == expected, "\(body)")
        }
    }
}
