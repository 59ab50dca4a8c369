@testable import API
import Foundation
import Packs
import Testing

/// The writer behind every API body and event: the same JSON values JSONSerialization would
/// write, keys in one stable order, strings escaped so no input breaks the document.
@Suite struct SortedJSONWriterTests {
    private func text(_ value: Any) -> String { String(decoding: SortedJSONWriter.encode(value), as: UTF8.self) }

    @Test func keysAreSortedAtEveryLevelAndScalarsKeepTheirTypes() throws {
        let value: [String: Any] = [
            "zeta": 1, "alpha": ["b": true, "a": false, "completed_at": NSNull(), "completed_bytes": Int64(5)],
            "list": [1.5, "x", [String: Any]()], "big": Int64.max, "double": 20.0,
        ]
        #expect(text(value) == #"{"alpha":{"a":false,"b":true,"completed_at":null,"completed_bytes":5},"big":9223372036854775807,"double":20.0,"list":[1.5,"x",{}],"zeta":1}"#)
    }

    @Test func parsedDocumentsRoundTrip() throws {
        // An error document as the store keeps it, parsed by Foundation (NSNumber booleans and numbers).
        let stored = #"{"code": "upstream_unauthorized", "status": 401, "retry": false, "ratio": 0.25, "url": "https://a.example/x/y"}"#
        let parsed = try JSONSerialization.jsonObject(with: Data(stored.utf8))
        let written = SortedJSONWriter.encode(["error": parsed])
        let back = try #require(try JSONSerialization.jsonObject(with: Data(written)) as? [String: Any])
        let error = try #require(back["error"] as? [String: Any])
        #expect(error["status"] as? Int == 401)
        #expect(error["ratio"] as? Double == 0.25)
        #expect(error["url"] as? String == "https://a.example/x/y")
        #expect(String(decoding: written, as: UTF8.self).contains(#""retry":false"#))
    }

    @Test func stringsAreEscapedAndNonFiniteNumbersAreNull() throws {
        let tricky = "quote \" backslash \\ newline \n tab \t bell \u{07} slash / é"
        let written = SortedJSONWriter.encode(["s": tricky, "nan": Double.nan])
        #expect(!written.contains(0x0A) && !written.contains(0x07))
        let back = try #require(try JSONSerialization.jsonObject(with: Data(written)) as? [String: Any])
        #expect(back["s"] as? String == tricky)
        #expect(back["nan"] is NSNull)
    }
}
