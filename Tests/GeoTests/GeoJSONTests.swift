import Foundation
import Testing
@testable import Geo

@Suite struct GeoJSONTests {
    private func parse(_ json: String, limits: GeoJSONLimits = .init()) throws(GeoError) -> Geometry {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8), options: [.fragmentsAllowed])
        return try Geometry(geoJSON: object as Any, pointer: "/geometry", limits: limits)
    }

    private func failure(_ json: String, limits: GeoJSONLimits = .init()) -> GeoError? {
        do {
            _ = try parse(json, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func everyTypeRoundTrips() throws {
        let documents = [
            #"{"type":"Point","coordinates":[12.5,41.9]}"#,
            #"{"type":"MultiPoint","coordinates":[[1,2],[3,4,100]]}"#,
            #"{"type":"LineString","coordinates":[[-180,-90],[180,90]]}"#,
            #"{"type":"MultiLineString","coordinates":[[[0,0],[1,1]],[[2,2],[3,3]]]}"#,
            #"{"type":"Polygon","coordinates":[[[0,0],[10,0],[10,10],[0,0]],[[1,1],[2,1],[2,2],[1,1]]]}"#,
            #"{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[5,5],[6,5],[6,6],[5,5]]]]}"#,
            #"{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[1,2]},{"type":"GeometryCollection","geometries":[{"type":"LineString","coordinates":[[0,0],[1,1]]}]}]}"#,
        ]
        for document in documents {
            let geometry = try parse(document)
            let serialized = try JSONSerialization.data(withJSONObject: geometry.geoJSONObject)
            let again = try Geometry(geoJSON: try JSONSerialization.jsonObject(with: serialized))
            #expect(again == geometry, "\(document)")
        }
        #expect(try parse(#"{"type":"Point","coordinates":[12.5,41.9]}"#) == .point(lngLat(12.5, 41.9)))
    }

    @Test func boundsSpanEveryPosition() throws {
        let geometry = try parse(#"{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[-30,5]},{"type":"LineString","coordinates":[[10,-20],[40,60]]}]}"#)
        #expect(geometry.bounds == (try LngLatBounds(west: -30, south: -20, east: 40, north: 60)))
    }

    static let errors: [(json: String, pointer: String, mentions: String)] = [
        (#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}"#, "/geometry/coordinates/0/3", "not closed"),
        (#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[0,0]]]}"#, "/geometry/coordinates/0", "at least 4"),
        (#"{"type":"Polygon","coordinates":[]}"#, "/geometry/coordinates", "empty"),
        (#"{"type":"MultiPolygon","coordinates":[[[[0,0],[1,0],[1,1],[0,0]]],[[[0,0],[1,0],[1,1],[0,0]],[[0,0],[1,0],[1,1],[0,0.5]]]]}"#,
         "/geometry/coordinates/1/1/3", "not closed"),
        (#"{"type":"LineString","coordinates":[[0,0]]}"#, "/geometry/coordinates", "at least 2"),
        (#"{"type":"MultiPoint","coordinates":[]}"#, "/geometry/coordinates", "empty"),
        (#"{"type":"GeometryCollection","geometries":[]}"#, "/geometry/geometries", "empty"),
        (#"{"type":"Point","coordinates":[181,0]}"#, "/geometry/coordinates/0", "longitude"),
        (#"{"type":"Point","coordinates":[0,-90.5]}"#, "/geometry/coordinates/1", "latitude"),
        (#"{"type":"Point","coordinates":[0,true]}"#, "/geometry/coordinates/1", "number"),
        (#"{"type":"Point","coordinates":[0,"1"]}"#, "/geometry/coordinates/1", "number"),
        (#"{"type":"Point","coordinates":[0]}"#, "/geometry/coordinates", "position"),
        (#"{"type":"Point","coordinates":[0,1,2,3]}"#, "/geometry/coordinates", "position"),
        (#"{"type":"Point"}"#, "/geometry/coordinates", "coordinates"),
        (#"{"coordinates":[0,0]}"#, "/geometry/type", "type"),
        (#"{"type":"Circle","coordinates":[0,0]}"#, "/geometry/type", "Circle"),
        (#"{"type":"Feature","geometry":null}"#, "/geometry/coordinates", "coordinates"),
        (#"[0,0]"#, "/geometry", "object"),
        (#"{"type":"GeometryCollection","geometries":[{"type":"Point","coordinates":[0,0]},{"type":"Point","coordinates":[0,95]}]}"#,
         "/geometry/geometries/1/coordinates/1", "latitude"),
    ]

    @Test(arguments: errors.indices)
    func invalidGeometryIsRejectedWithPointer(_ index: Int) {
        let (json, pointer, mentions) = Self.errors[index]
        let error = failure(json)
        #expect(error?.pointer == pointer, "\(json)")
        #expect(error?.detail.contains(mentions) == true, "\(String(describing: error))")
    }

    @Test func nonFiniteNumbersAreRejected() {
        // JSON text cannot spell them, but decoded documents from other sources can hold them.
        for (value, index) in [(Double.nan, 0), (Double.infinity, 1), (-Double.infinity, 1)] {
            var position: [Any] = [1.0, 2.0]
            position[index] = value
            let object: [String: Any] = ["type": "LineString", "coordinates": [[0.0, 0.0], position]]
            #expect(throws: GeoError.self) { try Geometry(geoJSON: object) }
            do {
                _ = try Geometry(geoJSON: object)
            } catch {
                #expect(error.pointer == "/coordinates/1/\(index)")
                #expect(error.detail.contains("finite"))
            }
        }
    }

    @Test func nestingDeeperThanLimitIsRejected() {
        var json = #"{"type":"Point","coordinates":[0,0]}"#
        for _ in 0..<3 { json = #"{"type":"GeometryCollection","geometries":["# + json + "]}" }
        // Depth 4: accepted at maxDepth 4, rejected at 3 with a pointer to the too-deep member.
        #expect(failure(json, limits: GeoJSONLimits(maxDepth: 4)) == nil)
        let error = failure(json, limits: GeoJSONLimits(maxDepth: 3))
        #expect(error?.pointer == "/geometry/geometries/0/geometries/0/geometries/0")
        #expect(error?.detail.contains("deeper") == true)
    }

    @Test func vertexLimitCountsAcrossMembers() {
        let line = #"{"type":"LineString","coordinates":[[0,0],[1,1],[2,2]]}"#
        let json = #"{"type":"GeometryCollection","geometries":["# + line + "," + line + "]}"
        #expect(failure(json, limits: GeoJSONLimits(maxVertices: 6)) == nil)
        let error = failure(json, limits: GeoJSONLimits(maxVertices: 5))
        #expect(error?.pointer == "/geometry/geometries/1/coordinates/2")
        #expect(error?.detail.contains("5") == true)
    }
}
