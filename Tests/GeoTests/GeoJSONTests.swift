import Foundation
import Testing
@testable import Geo

@Suite struct GeoJSONTests {
    private func parse(_ json: String, limits: GeoJSONLimits = .init()) throws(GeoError) -> Geometry {
        let object = try? JSONSerialization.jsonObject(with: Data(json.utf8))
        return try Geometry(geoJSON: object as Any, limits: limits)
    }

    private func error(_ json: String, limits: GeoJSONLimits = .init()) -> GeoError? {
        do {
            _ = try parse(json, limits: limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func polygonRoundTrips() throws {
        let geometry = try parse(#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,0]]]}"#)
        let again = try Geometry(geoJSON: geometry.geoJSONObject)
        #expect(again == geometry)
        #expect(geometry == .polygon([[.init(longitude: 0, latitude: 0), .init(longitude: 1, latitude: 0),
                                       .init(longitude: 1, latitude: 1), .init(longitude: 0, latitude: 0)]]))
    }

    @Test func unclosedRingPointsAtLastPosition() {
        let e = error(#"{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1],[0,1]]]}"#)
        #expect(e?.pointer == "/coordinates/0/3")
    }
}
