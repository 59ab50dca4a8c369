/// A region readied for covering at any zoom: boxes stay boxes (closed form), geometries are
/// projected and sorted once.
enum PreparedRegion: Sendable {
    case bounds(LngLatBounds)
    case shape(PreparedShape)

    init(_ region: TileRegion) {
        switch region {
        case .bounds(let bounds): self = .bounds(bounds)
        case .geometry(let geometry): self = .shape(PreparedShape(geometry))
        }
    }
}
