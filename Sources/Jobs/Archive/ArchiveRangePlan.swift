import Geo

/// Which requests fetch a set of tiles from an archive: the tiles' bytes sorted by offset and
/// merged into one request while the gap to the next tile's bytes is at most `maxGap` and the
/// request stays within `maxSpan` bytes (a single tile larger than that is a request of its own).
/// Tiles sharing their bytes (the spec's deduplication: one offset for the ocean of a whole zoom)
/// are one piece, fetched once. Pure.
///
/// Why two bounds: a request costs a round trip and a header or two, a gap costs its bytes. A
/// clustered archive keeps a region's tiles in long runs broken by the tiles of neighbouring
/// places and by deduplicated tiles that point back; a gap bound a little above a typical tile
/// bridges those without fetching whole other regions. The size bound keeps each answer's memory
/// small and lets a large region's bytes come over several connections or streams at once.
struct ArchiveRangePlan: Sendable {
    struct Bounds: Sendable, Equatable {
        var maxGap: UInt64
        var maxSpan: UInt64
    }

    /// One distinct content of the archive and the tiles that are it.
    struct Piece: Sendable, Equatable {
        /// Absolute offset in the archive.
        var offset: UInt64
        var length: UInt64
        var tiles: [TileID]
    }

    /// One request: its bytes and the pieces they hold.
    struct Request: Sendable, Equatable {
        var bytes: ClosedRange<UInt64>
        var pieces: [Piece]

        var count: UInt64 { bytes.upperBound - bytes.lowerBound + 1 }
        var tileCount: Int { pieces.reduce(0) { $0 + $1.tiles.count } }

        /// The bytes of `piece` in this request's answer `body` (which starts at `bytes.lowerBound`).
        func slice(_ piece: Piece, of body: [UInt8]) -> ArraySlice<UInt8> {
            let start = Int(piece.offset - bytes.lowerBound)
            return body[start..<(start + Int(piece.length))]
        }
    }

    var requests: [Request] = []
    /// Tiles whose entries have length 0: empty tiles, needing no bytes.
    var empty: [TileID] = []

    /// `tiles`: each tile's absolute offset and length.
    init(_ tiles: [(tile: TileID, offset: UInt64, length: UInt64)], bounds: Bounds) {
        var pieces: [PieceKey: Piece] = [:]
        for tile in tiles {
            guard tile.length > 0 else {
                empty.append(tile.tile)
                continue
            }
            pieces[PieceKey(offset: tile.offset, length: tile.length), default: Piece(offset: tile.offset, length: tile.length, tiles: [])]
                .tiles.append(tile.tile)
        }
        let sorted = pieces.values.sorted { ($0.offset, $0.length) < ($1.offset, $1.length) }
        var start: UInt64 = 0
        var end: UInt64 = 0
        var open: [Piece] = []
        for piece in sorted {
            let pieceEnd = piece.offset + piece.length
            if !open.isEmpty {
                let gap = piece.offset > end ? piece.offset - end : 0
                if gap <= bounds.maxGap, max(end, pieceEnd) - start <= max(bounds.maxSpan, 1) {
                    open.append(piece)
                    end = max(end, pieceEnd)
                    continue
                }
                requests.append(Request(bytes: start...(end - 1), pieces: open))
                open.removeAll()
            }
            start = piece.offset
            end = pieceEnd
            open.append(piece)
        }
        if !open.isEmpty { requests.append(Request(bytes: start...(end - 1), pieces: open)) }
    }

    private struct PieceKey: Hashable {
        let offset: UInt64
        let length: UInt64
    }

    /// Bytes the requests fetch in all (tiles, shared pieces once, and the gaps between them).
    var bytes: UInt64 { requests.reduce(0) { $0 + $1.count } }
}
