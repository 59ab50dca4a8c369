import Geo
import Testing

@testable import Plan

@Suite struct TileURLTemplateTests {
    @Test func expandsCoordinatesRatioAndSubdomains() throws {
        let template = try TileURLTemplate(
            "https://{s}.tile.example.org/{z}/{x}/{y}{ratio}.png", subdomains: ["a", "b", "c"])
        let tile = TileID(z: 3, x: 5, y: 2)
        // (x + y) % 3 = 7 % 3 = 1 → "b".
        #expect(template.url(for: tile, pixelRatio: 2) == "https://b.tile.example.org/3/5/2@2x.png")
        #expect(template.url(for: tile, pixelRatio: 1) == "https://b.tile.example.org/3/5/2.png")
        #expect(template.storedPixelRatio(for: 2) == 2)
        #expect(template.storedPixelRatio(for: 1) == 1)
        // Neighbouring tiles spread over every subdomain, each tile always to the same one.
        let hosts = Set((0..<3).map { template.url(for: TileID(z: 3, x: $0, y: 0), pixelRatio: 1).prefix(10) })
        #expect(hosts.count == 3)
        #expect(template.url(for: tile, pixelRatio: 1) == template.url(for: tile, pixelRatio: 1))
    }

    @Test func ratioOnlyCountsWhenTheTemplateHasIt() throws {
        let template = try TileURLTemplate("https://example.org/{z}/{x}/{y}.png")
        #expect(template.storedPixelRatio(for: 3) == 1)
        #expect(template.url(for: TileID(z: 1, x: 1, y: 0), pixelRatio: 3) == "https://example.org/1/1/0.png")
    }

    @Test func tmsFlipsOnlyTheRow() throws {
        let template = try TileURLTemplate("https://example.org/{z}/{x}/{y}/{-y}/{quadkey}", scheme: .tms)
        // z3: TMS row = 7 - 2 = 5; {-y} is always the TMS row; quadkey uses the real tile.
        #expect(template.url(for: TileID(z: 3, x: 5, y: 2), pixelRatio: 1) == "https://example.org/3/5/5/5/121")
        let xyz = try TileURLTemplate("https://example.org/{z}/{x}/{y}/{-y}")
        #expect(xyz.url(for: TileID(z: 3, x: 5, y: 2), pixelRatio: 1) == "https://example.org/3/5/2/5")
    }

    @Test func quadkeyBboxAndPrefix() throws {
        let quadkey = try TileURLTemplate("https://t.example.org/tiles/a{quadkey}.jpeg")
        // x = 5 = 0b101, y = 2 = 0b010: digits (x bit + 2 * y bit) from the top: 1, 2, 1.
        #expect(quadkey.url(for: TileID(z: 3, x: 5, y: 2), pixelRatio: 1) == "https://t.example.org/tiles/a121.jpeg")

        let wms = try TileURLTemplate("https://wms.example.org/wms?bbox={bbox-epsg-3857}&format=image/png")
        let half = 20037508.342789244
        #expect(
            wms.url(for: TileID(z: 1, x: 0, y: 0), pixelRatio: 1)
                == "https://wms.example.org/wms?bbox=-\(half),0,0,\(half)&format=image/png")

        let prefix = try TileURLTemplate("https://example.org/{prefix}/{z}/{x}/{y}.pbf")
        // 26 % 16 = 10 → "a", 17 % 16 = 1 → "1".
        #expect(prefix.url(for: TileID(z: 5, x: 26, y: 17), pixelRatio: 1) == "https://example.org/a1/5/26/17.pbf")
    }

    @Test func unknownPlaceholdersStayVerbatim() throws {
        let template = try TileURLTemplate("https://example.org/{z}/{x}/{y}.pbf?key={key}&v={")
        #expect(template.url(for: TileID(z: 2, x: 1, y: 3), pixelRatio: 1) == "https://example.org/2/1/3.pbf?key={key}&v={")
    }

    @Test(arguments: [
        "https://example.org/{z}/{x}.png", "https://example.org/tiles.png", "https://example.org/{x}/{y}.png",
    ])
    func templatesThatCannotAddressATileAreRejected(_ text: String) {
        #expect(throws: PlanError.self) { try TileURLTemplate(text) }
        do {
            _ = try TileURLTemplate(text)
        } catch {
            #expect(error.code == .templateWithoutCoordinates)
        }
    }

    @Test func subdomainPlaceholderNeedsSubdomains() {
        #expect(throws: PlanError.self) { try TileURLTemplate("https://{s}.example.org/{z}/{x}/{y}.png") }
    }
}
