import Foundation
import PackdTestSupport
import Packs
import Testing
@testable import Store

/// Databases written the way MapLibre Native writes them (`MapLibreWrittenDatabase`): style URLs
/// of the schemes phones store, `mapbox://tiles/…` templates, ambient rows of kind 0.
@Suite struct MapLibreInteropTests {
    @Test(arguments: ["mapbox://styles/mapbox/streets-v11", "maptiler://maps/basic", "asset://styles/local.json",
                      "file:///sdcard/maps/style.json"])
    func aDatabaseMapLibreWroteImportsWithItsRegionExactlyAsStored(styleURL: String) throws {
        let fixture = StoreIOFixture()
        let upload = fixture.path("phone.db")
        try MapLibreWrittenDatabase.write(to: upload, styleURL: styleURL)
        let validated = try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory)
        let target = try fixture.packdDatabase("target.db")
        #expect(try OfflineDatabaseImport.merge(validated, into: target, now: 1_800_000_000) == [.init(id: 1, added: true)])

        let source = try Database(path: upload, mode: .readOnly)
        #expect(try ImportTests.packRows(target, 1) == ImportTests.packRows(source, 1))
        #expect(try rows(target, "SELECT definition FROM regions WHERE id = 1")
                == [[.text(MapLibreWrittenDatabase.definition(styleURL: styleURL))]])
        #expect(try rows(target, "SELECT url FROM resources WHERE kind = 1") == [[.text(styleURL)]])
        #expect(try rows(target, "SELECT DISTINCT url_template FROM tiles") == [[.text(MapLibreWrittenDatabase.tileTemplate)]])
        #expect(try rows(target, "SELECT name FROM packd_packs WHERE region_id = 1") == [[.text("Phone pack")]])
        // The upload's ambient kind-0 row passed the checks; as in MapLibre's own merge, only a
        // region's rows are taken over.
        #expect(try target.scalarInt("SELECT count(*) FROM resources WHERE url = ?1", [.text(MapLibreWrittenDatabase.ambientURL)]) == 0)
    }

    /// Kind 0 (`Unknown`) through 7 are MapLibre's `Resource::Kind`; anything else is refused.
    @Test(arguments: [(Int64(0), true), (7, true), (8, false), (-1, false)])
    func resourceKindsAreMapLibres(kind: Int64, accepted: Bool) throws {
        let fixture = StoreIOFixture()
        let upload = fixture.path("phone.db")
        try MapLibreWrittenDatabase.write(to: upload, styleURL: "mapbox://styles/mapbox/streets-v11")
        let database = try Database(path: upload, mode: .readWrite)
        try database.execute("UPDATE resources SET kind = ?1 WHERE url = ?2", [.integer(kind), .text(MapLibreWrittenDatabase.ambientURL)])
        if accepted {
            _ = try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory)
        } else {
            #expect(throws: ImportError.invalidRows("1 resources with invalid kinds, types or sizes")) {
                try ValidatedImport.check(path: upload, scratchDirectory: fixture.directory)
            }
        }
    }
}
