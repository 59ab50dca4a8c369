import Foundation
import Geo

/// The tiles of one tile source: a template, the zooms to download, and the region's cover at
/// each of them (clipped to the TileJSON bounds). Tiles are computed as they are iterated,
/// never stored: a pyramid of a billion tiles costs what one cover's row state costs.
public struct TilePyramid: Hashable, Sendable {
    /// Style source id, or `"tiles"` for a template region.
    public let sourceID: String
    public let template: TileURLTemplate
    /// Ascending, without duplicates (sources sharing a template are merged into one pyramid).
    public let zooms: [Int]
    public let area: TileRegion
    public let clip: LngLatBounds?
    public let pixelRatio: Double

    public init(
        sourceID: String, template: TileURLTemplate, zooms: [Int], area: TileRegion, clip: LngLatBounds?,
        pixelRatio: Double
    ) {
        self.sourceID = sourceID
        self.template = template
        self.zooms = Array(Set(zooms)).sorted()
        self.area = area
        self.clip = clip
        self.pixelRatio = pixelRatio
    }

    public func cover(zoom: Int) -> TileCover {
        TileCover(region: area, zoom: zoom, within: clip)
    }

    /// Exact tile counts per zoom, computed without enumerating tiles.
    public var tileCounts: [TileCount] {
        zooms.map { TileCount(sourceID: sourceID, zoom: $0, count: cover(zoom: $0).count) }
    }

    /// All tiles; saturates at `Int.max` (a world pyramid to z30 of several sources could exceed it).
    public var tileCount: Int {
        zooms.reduce(0) { $0.saturatingAdd(cover(zoom: $1).count) }
    }

    /// The tiles as resources, zoom by zoom, each zoom in its cover's (y, x) order.
    public var resources: Resources { Resources(pyramid: self) }

    public struct Resources: Sequence, Sendable {
        let pyramid: TilePyramid

        public func makeIterator() -> Iterator { Iterator(pyramid: pyramid) }

        public struct Iterator: IteratorProtocol {
            let pyramid: TilePyramid
            private var zoomIndex = 0
            private var tiles: TileCover.Iterator?

            init(pyramid: TilePyramid) {
                self.pyramid = pyramid
            }

            public mutating func next() -> PlannedResource? {
                while zoomIndex < pyramid.zooms.count {
                    if tiles == nil { tiles = pyramid.cover(zoom: pyramid.zooms[zoomIndex]).makeIterator() }
                    if let tile = tiles?.next() {
                        return pyramid.resource(for: tile)
                    }
                    tiles = nil
                    zoomIndex += 1
                }
                return nil
            }
        }
    }

    /// The resource of one tile of this pyramid, for callers that walk `cover(zoom:).spans`
    /// themselves (e.g. to skip stored rows with one query per span).
    public func resource(for tile: TileID) -> PlannedResource {
        let address = TileAddress(
            urlTemplate: template.template, pixelRatio: template.storedPixelRatio(for: pixelRatio), z: tile.z,
            x: tile.x, y: tile.y)
        return PlannedResource(kind: .tile, url: template.url(for: tile, pixelRatio: pixelRatio), tile: address)
    }

    /// MapLibre's `coveringZoomRange`: the region's zooms shifted by the source's tile size
    /// (`z + log2(512 / tileSize)`, rounded for raster, floored otherwise) and clamped to the
    /// source's own range; `nil` `maxZoom` means the source's maxzoom.
    public static func coveringZooms(
        minZoom: Double, maxZoom: Double?, kind: StyleDocument.TileSource.Kind, tileSize: Int,
        sourceRange: ClosedRange<Int>
    ) -> [Int] {
        func covering(_ zoom: Double) -> Int {
            let shifted = zoom + log2(512 / Double(max(tileSize, 1)))
            let rounded = kind == .raster ? shifted.rounded() : shifted.rounded(.down)
            return Int(min(max(rounded, -1), Double(Tileset.maxZoom) + 1))
        }
        let lower = max(covering(minZoom), sourceRange.lowerBound)
        let upper = min(maxZoom.map(covering) ?? sourceRange.upperBound, sourceRange.upperBound)
        return lower <= upper ? Array(lower...upper) : []
    }
}

/// Tiles of one source at one zoom.
public struct TileCount: Hashable, Sendable {
    public let sourceID: String
    public let zoom: Int
    public let count: Int
}

extension Int {
    /// Sum that stops at `Int.max` instead of trapping: counts derive from user input.
    func saturatingAdd(_ other: Int) -> Int {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? .max : sum
    }
}
