import Foundation
import Packs
import Server
import Testing
@testable import API

@Suite struct StrictJSONDecoderTests {
    struct Region: Codable, Equatable {
        var minZoom: Int
        var maxZoom: Int
        var bounds: [Double]

        enum CodingKeys: String, CodingKey {
            case minZoom = "min_zoom"
            case maxZoom = "max_zoom"
            case bounds
        }
    }

    struct CreatePack: Codable, Equatable {
        var name: String
        var region: Region
        var context: String?
        var tags: [String: String]?
    }

    func request(_ body: String, contentType: String? = "application/json") -> HTTPRequest {
        var headers = HTTPHeaders()
        if let contentType { headers.add("Content-Type", contentType) }
        return HTTPRequest(method: .post, target: "/v1/packs", headers: headers, body: Array(body.utf8))
    }

    func problem(_ body: String, contentType: String? = "application/json") -> Problem? {
        do {
            _ = try StrictJSONDecoder().decode(CreatePack.self, from: request(body, contentType: contentType))
            return nil
        } catch {
            return error
        }
    }

    let valid = #"{"name":"a","region":{"min_zoom":0,"max_zoom":3,"bounds":[1,2,3,4]},"context":null,"tags":{"x":"y"}}"#

    @Test func decodesAValidBody() throws {
        let pack = try StrictJSONDecoder().decode(CreatePack.self, from: request(valid, contentType: "application/json; charset=utf-8"))
        #expect(pack.region.maxZoom == 3)
        #expect(pack.tags == ["x": "y"])
    }

    @Test func rejectsUnknownFieldsAtEveryDepthWithPointers() {
        let found = problem(#"{"name":"a","colour":1,"region":{"min_zoom":0,"max_zoom":3,"bounds":[],"max~zoom/x":2},"tags":{"any":"key"}}"#)
        #expect(found?.status == 422)
        #expect(found?.type == "urn:packd:problem:validation-failed")
        #expect(found?.errors?.map(\.pointer) == ["/colour", "/region/max~0zoom~1x"])
    }

    /// `null` is how a client leaves an optional field out; a key the type does not have stays
    /// unknown whatever its value, at any depth, and a body of many nulls is not probed forever.
    @Test func nullForAnOptionalFieldIsAcceptedAndForAnUnknownKeyIsNot() throws {
        let optionals = #"{"name":"a","region":{"min_zoom":0,"max_zoom":3,"bounds":[]},"context":null,"tags":null}"#
        #expect(try StrictJSONDecoder().decode(CreatePack.self, from: request(optionals)).context == nil)
        #expect(problem(#"{"name":"a","region":{"min_zoom":0,"max_zoom":3,"bounds":[]},"":null}"#)?.errors?.map(\.pointer) == ["/"])
        #expect(problem(#"{"name":"a","region":{"min_zoom":0,"max_zoom":3,"bounds":[],"extra":null},"colour":null}"#)?.errors?.map(\.pointer)
            == ["/colour", "/region/extra"])
        let manyNulls = (0..<200).map { "\"k\($0)\":null" }.joined(separator: ",")
        let flood = problem(#"{"name":"a","region":{"min_zoom":0,"max_zoom":3,"bounds":[]},"# + manyNulls + "}")
        #expect(flood?.status == 422)
        #expect(flood?.errors?.count == 21) // 20 listed, then "more unknown fields"
    }

    @Test func reportsSchemaViolationsAsValidationFailures() {
        let missing = problem(#"{"name":"a","region":{"min_zoom":0,"bounds":[]}}"#)
        #expect(missing?.status == 422)
        #expect(missing?.errors == [Problem.FieldError(pointer: "/region/max_zoom", detail: "required field is missing")])
        let wrongType = problem(#"{"name":"a","region":{"min_zoom":"0","max_zoom":1,"bounds":[]}}"#)
        #expect(wrongType?.errors?.first?.pointer == "/region/min_zoom")
        let wrongElement = problem(#"{"name":"a","region":{"min_zoom":0,"max_zoom":1,"bounds":[1,"x"]}}"#)
        #expect(wrongElement?.errors?.first?.pointer == "/region/bounds/1")
        let null = problem(#"{"name":null,"region":{"min_zoom":0,"max_zoom":1,"bounds":[]}}"#)
        #expect(null?.errors?.first?.pointer == "/name")
        let overflow = problem(#"{"name":"a","region":{"min_zoom":1e30,"max_zoom":1,"bounds":[]}}"#)
        #expect(overflow?.status == 422)
    }

    @Test func separatesMalformedBodiesAndWrongMediaTypes() {
        #expect(problem("{\"name\":").map { "\($0.status) \($0.type)" } == "400 urn:packd:problem:malformed-request")
        #expect(problem("")?.status == 400)
        #expect(problem(String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000))?.status == 400)
        #expect(problem(valid, contentType: "text/plain").map { "\($0.status) \($0.type)" } == "415 urn:packd:problem:unsupported-media-type")
        #expect(problem(valid, contentType: nil)?.status == 415)
        #expect(problem(valid, contentType: "application/jsonx")?.status == 415)
    }

    @Test func nestingDepthIgnoresBracketsInStrings() {
        #expect(StrictJSONDecoder.nestingDepth(Array(#"{"a":"[[[[\"{{"}"#.utf8), limit: 64) == 1)
        #expect(StrictJSONDecoder.nestingDepth(Array("[[[]],[]]".utf8), limit: 64) == 3)
    }

    @Test func problemTypesMatchTheirStatuses() {
        for type in ProblemType.allCases {
            let problem = Problem(type, detail: "x")
            #expect(problem.type == "urn:packd:problem:\(type.rawValue)")
            #expect(problem.status == type.status.code)
            #expect(problem.type.range(of: "^urn:packd:problem:[a-z-]+$", options: .regularExpression) != nil)
        }
        // 18 + expectation-failed (417) + gone (410) and range-not-satisfiable (416) of artifacts; see ServerTests.ProblemTypeTests
        #expect(ProblemType.allCases.count == 21)
    }
}
