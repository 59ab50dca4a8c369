/// The spans of a `TileCover`, row by row: what a counter or a bulk writer consumes instead of
/// single tiles.
public struct TileSpans: Sequence, Sendable {
    enum Source: Sendable {
        case bounds(BoundsCover)
        case shape(PreparedShape, BoundsCover?)
    }

    let source: Source
    public let zoom: Int

    public func makeIterator() -> Iterator {
        switch source {
        case .bounds(let cover):
            return Iterator(state: .bounds(cover, row: cover.rows?.lowerBound ?? 0, column: 0))
        case .shape(let shape, let clip):
            var sweep = RowSweep(shape: shape, zoom: zoom)
            if let clip { sweep.skip(to: clip.rows?.lowerBound ?? Int.max) }
            return Iterator(state: .shape(sweep, clip: clip, spans: [], next: 0, row: 0))
        }
    }

    public struct Iterator: IteratorProtocol {
        enum State {
            case bounds(BoundsCover, row: Int, column: Int)
            case shape(RowSweep, clip: BoundsCover?, spans: [ClosedRange<Int>], next: Int, row: Int)
            case done
        }

        private var state: State

        init(state: State) {
            self.state = state
        }

        public mutating func next() -> TileSpan? {
            switch state {
            case .done:
                return nil
            case .bounds(let cover, var row, var column):
                guard let rows = cover.rows, row <= rows.upperBound, !cover.columns.isEmpty else {
                    state = .done
                    return nil
                }
                let span = TileSpan(y: row, xRange: cover.columns[column])
                column += 1
                if column == cover.columns.count {
                    column = 0
                    row += 1
                }
                state = .bounds(cover, row: row, column: column)
                return span
            case .shape(var sweep, let clip, var spans, var next, var row):
                state = .done // drop the buffers' second reference while mutating them
                while next == spans.count {
                    let lastRow = clip.map { $0.rows?.upperBound ?? -1 } ?? Int.max
                    guard let found = sweep.nextRow(upTo: lastRow, spans: &spans) else { return nil }
                    if let clip { spans = TileGrid.intersect(spans, clip.columns) }
                    row = found
                    next = 0
                }
                let span = TileSpan(y: row, xRange: spans[next])
                next += 1
                state = .shape(sweep, clip: clip, spans: spans, next: next, row: row)
                return span
            }
        }
    }
}
