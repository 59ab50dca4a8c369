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
            return Iterator(bounds: cover)
        case .shape(let shape, let clip):
            return Iterator(sweep: RowSweep(shape: shape, zoom: zoom), clip: clip)
        }
    }

    /// Plain stored properties rather than an enum with payloads: advancing then mutates the
    /// sweep in place instead of moving it out of and back into the enum for every span.
    public struct Iterator: IteratorProtocol {
        private var bounds: BoundsCover?
        private var sweep: RowSweep?
        private let clip: BoundsCover?
        private var spans: [ClosedRange<Int>] = []
        private var spanIndex = 0
        private var row = 0

        init(bounds: BoundsCover) {
            self.bounds = bounds
            self.clip = nil
            self.row = bounds.rows?.lowerBound ?? 0
        }

        init(sweep: RowSweep, clip: BoundsCover?) {
            self.sweep = sweep
            self.clip = clip
            if let clip { self.sweep?.skip(to: clip.rows?.lowerBound ?? Int.max) }
        }

        public mutating func next() -> TileSpan? {
            if let bounds {
                guard let rows = bounds.rows, row <= rows.upperBound, spanIndex < bounds.columns.count else { return nil }
                let span = TileSpan(y: row, xRange: bounds.columns[spanIndex])
                spanIndex += 1
                if spanIndex == bounds.columns.count {
                    spanIndex = 0
                    row += 1
                }
                return span
            }
            while spanIndex == spans.count {
                let lastRow = clip.map { $0.rows?.upperBound ?? -1 } ?? Int.max
                guard let found = sweep?.nextRow(upTo: lastRow, spans: &spans) else { return nil }
                if let clip { spans = TileGrid.intersect(spans, clip.columns) }
                row = found
                spanIndex = 0
            }
            spanIndex += 1
            return TileSpan(y: row, xRange: spans[spanIndex - 1])
        }
    }
}
