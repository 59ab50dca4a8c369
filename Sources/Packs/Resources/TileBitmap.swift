/// Which tiles of an x/y window at one zoom are stored: one bit per tile, so the download can
/// skip stored tiles without a query per tile. Windows are bounded (`maximumTiles`); callers
/// walk bigger covers window by window.
public struct TileBitmap: Sendable, Equatable {
    public let xRange: ClosedRange<Int64>
    public let yRange: ClosedRange<Int64>
    private var words: [UInt64]
    private let width: Int

    /// 16 Mi tiles: 2 MiB of bits, a 4096 × 4096 window.
    public static let maximumTiles = 1 << 24

    public enum Failure: Error, Equatable {
        case windowTooLarge(tiles: Int64)
    }

    public init(xRange: ClosedRange<Int64>, yRange: ClosedRange<Int64>) throws(Failure) {
        let (w, o1) = xRange.upperBound.subtractingReportingOverflow(xRange.lowerBound)
        let (h, o2) = yRange.upperBound.subtractingReportingOverflow(yRange.lowerBound)
        let (area, o3) = (w &+ 1).multipliedReportingOverflow(by: h &+ 1)
        guard !o1, !o2, !o3, w < Int64(Self.maximumTiles), h < Int64(Self.maximumTiles), area <= Int64(Self.maximumTiles) else {
            throw .windowTooLarge(tiles: o1 || o2 || o3 ? Int64.max : area)
        }
        self.xRange = xRange
        self.yRange = yRange
        self.width = Int(w + 1)
        self.words = [UInt64](repeating: 0, count: (Int(area) + 63) / 64)
    }

    private func bitIndex(x: Int64, y: Int64) -> Int? {
        guard xRange.contains(x), yRange.contains(y) else { return nil }
        return Int(y - yRange.lowerBound) * width + Int(x - xRange.lowerBound)
    }

    public mutating func insert(x: Int64, y: Int64) {
        guard let index = bitIndex(x: x, y: y) else { return }
        words[index >> 6] |= 1 << UInt64(index & 63)
    }

    public func contains(x: Int64, y: Int64) -> Bool {
        guard let index = bitIndex(x: x, y: y) else { return false }
        return words[index >> 6] & (1 << UInt64(index & 63)) != 0
    }

    public var count: Int { words.reduce(0) { $0 + $1.nonzeroBitCount } }

    /// The stored tiles of row `y` as sorted, maximal x spans.
    public func spans(y: Int64) -> [ClosedRange<Int64>] {
        var result: [ClosedRange<Int64>] = []
        var start: Int64?
        for x in xRange {
            if contains(x: x, y: y) {
                if start == nil { start = x }
            } else if let first = start {
                result.append(first...(x - 1))
                start = nil
            }
        }
        if let start { result.append(start...xRange.upperBound) }
        return result
    }
}
