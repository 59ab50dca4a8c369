/// A geometry projected once into the unit square and sorted for the row sweep. Because tile
/// coordinates are unit coordinates times 2^z (exact), one prepared shape serves every zoom:
/// a multi-zoom count pays for projection and sorting once.
struct PreparedShape: Sendable {
    /// A polygon ring edge in its original direction (the direction gives the winding sign).
    struct Edge: Sendable {
        var x0, y0, x1, y1: Double
        var ring: Int32
        var yMin: Double { min(y0, y1) }
        var yMax: Double { max(y0, y1) }
    }

    /// A line segment, stored top (smaller y) first.
    struct Segment: Sendable {
        var xTop, yTop, xBottom, yBottom: Double
    }

    struct Point: Sendable {
        var x, y: Double
    }

    /// Polygon edges sorted by `yMin`.
    private(set) var edges: [Edge] = []
    /// Line segments sorted by `yTop`.
    private(set) var segments: [Segment] = []
    /// Points sorted by `y`.
    private(set) var points: [Point] = []
    /// Per ring: its polygon, and whether it is a hole (any ring after a polygon's first).
    private(set) var ringPolygon: [Int32] = []
    private(set) var ringIsHole: [Bool] = []
    /// Per polygon: its exterior ring.
    private(set) var polygonExterior: [Int32] = []

    init(_ geometry: Geometry) {
        add(geometry)
        edges.sort { $0.yMin < $1.yMin }
        segments.sort { $0.yTop < $1.yTop }
        points.sort { $0.y < $1.y }
    }

    private mutating func add(_ geometry: Geometry) {
        switch geometry {
        case .point(let p): addPoint(p)
        case .multiPoint(let ps): ps.forEach { addPoint($0) }
        case .lineString(let line): addLine(line)
        case .multiLineString(let lines): lines.forEach { addLine($0) }
        case .polygon(let rings): addPolygon(rings)
        case .multiPolygon(let polygons): polygons.forEach { addPolygon($0) }
        case .geometryCollection(let members): members.forEach { add($0) }
        }
    }

    /// Geometry cases can be built without the reader, so positions are re-checked here:
    /// a non-finite one is dropped rather than trapping in the sweep's integer conversions.
    private static func project(_ position: LngLat) -> (x: Double, y: Double)? {
        guard position.longitude.isFinite, position.latitude.isFinite else { return nil }
        let (x, y) = WebMercator.project(position)
        return (min(max(x, 0), 1), y)
    }

    private mutating func addPoint(_ position: LngLat) {
        guard let (x, y) = Self.project(position) else { return }
        points.append(Point(x: x, y: y))
    }

    private mutating func addLine(_ line: [LngLat]) {
        let line = line.compactMap(Self.project)
        guard var previous = line.first else { return }
        if line.count == 1 {
            points.append(Point(x: previous.x, y: previous.y))
            return
        }
        for next in line.dropFirst() {
            if previous.y <= next.y {
                segments.append(Segment(xTop: previous.x, yTop: previous.y, xBottom: next.x, yBottom: next.y))
            } else {
                segments.append(Segment(xTop: next.x, yTop: next.y, xBottom: previous.x, yBottom: previous.y))
            }
            previous = next
        }
    }

    private mutating func addPolygon(_ rings: [[LngLat]]) {
        let polygon = Int32(polygonExterior.count)
        polygonExterior.append(Int32(ringPolygon.count))
        for (index, ring) in rings.enumerated() {
            let ringIndex = Int32(ringPolygon.count)
            ringPolygon.append(polygon)
            ringIsHole.append(index > 0)
            // The sweep relies on every ring being closed (its windings return to zero).
            let ring = ring.compactMap(Self.project)
            guard var previous = ring.last else { continue }
            for next in ring {
                if next != previous {
                    edges.append(Edge(x0: previous.x, y0: previous.y, x1: next.x, y1: next.y, ring: ringIndex))
                }
                previous = next
            }
        }
    }
}
