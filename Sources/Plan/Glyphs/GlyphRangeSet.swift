/// A set of the 256 glyph ranges (`0-255 … 65280-65535`) as four words: what one font stack's
/// labels need. A value; sets of any size cost 32 bytes.
public struct GlyphRangeSet: Hashable, Sendable, Sequence {
    private var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)

    public init() {}

    public init(_ starts: some Sequence<Int>) {
        for start in starts { insert(rangeContaining: start) }
    }

    /// Adds the range holding the UTF-16 code unit `unit` (what MapLibre requests glyphs by).
    public mutating func insert(codeUnit unit: UInt16) {
        insert(index: Int(unit >> 8))
    }

    /// Adds the ranges MapLibre requests to draw `scalar`: its own, or for a scalar beyond the
    /// Basic Multilingual Plane the ranges of its two surrogates (MapLibre walks UTF-16).
    public mutating func insert(_ scalar: Unicode.Scalar) {
        for unit in scalar.utf16 { insert(codeUnit: unit) }
    }

    /// Adds the range holding code point `codePoint` (0…65535; others are ignored).
    public mutating func insert(rangeContaining codePoint: Int) {
        guard (0..<65_536).contains(codePoint) else { return }
        insert(index: codePoint >> 8)
    }

    private mutating func insert(index: Int) {
        let bit = UInt64(1) << UInt64(index & 63)
        switch index >> 6 {
        case 0: words.0 |= bit
        case 1: words.1 |= bit
        case 2: words.2 |= bit
        default: words.3 |= bit
        }
    }

    public mutating func formUnion(_ other: GlyphRangeSet) {
        words = (words.0 | other.words.0, words.1 | other.words.1, words.2 | other.words.2, words.3 | other.words.3)
    }

    /// Whether the range starting at (or holding) `codePoint` is in the set.
    public func contains(rangeContaining codePoint: Int) -> Bool {
        guard (0..<65_536).contains(codePoint) else { return false }
        let index = codePoint >> 8
        let word: UInt64
        switch index >> 6 {
        case 0: word = words.0
        case 1: word = words.1
        case 2: word = words.2
        default: word = words.3
        }
        return word & (UInt64(1) << UInt64(index & 63)) != 0
    }

    public var count: Int {
        words.0.nonzeroBitCount + words.1.nonzeroBitCount + words.2.nonzeroBitCount + words.3.nonzeroBitCount
    }

    public var isEmpty: Bool { count == 0 }

    /// The first code point of each range in the set, ascending.
    public var starts: [Int] { (0..<256).filter { contains(rangeContaining: $0 << 8) }.map { $0 << 8 } }

    public func makeIterator() -> IndexingIterator<[Int]> { starts.makeIterator() }

    public static func == (lhs: GlyphRangeSet, rhs: GlyphRangeSet) -> Bool {
        lhs.words == rhs.words
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(words.0)
        hasher.combine(words.1)
        hasher.combine(words.2)
        hasher.combine(words.3)
    }
}

/// What a region's labels need: per font stack, the glyph ranges.
public struct GlyphNeeds: Hashable, Sendable {
    public private(set) var ranges: [[String]: GlyphRangeSet] = [:]

    public init() {}

    public init(_ ranges: [[String]: GlyphRangeSet]) {
        self.ranges = ranges.filter { !$0.value.isEmpty }
    }

    public subscript(stack: [String]) -> GlyphRangeSet {
        ranges[stack] ?? GlyphRangeSet()
    }

    public mutating func add(_ set: GlyphRangeSet, to stacks: some Sequence<[String]>) {
        guard !set.isEmpty else { return }
        for stack in stacks { ranges[stack, default: GlyphRangeSet()].formUnion(set) }
    }

    public mutating func formUnion(_ other: GlyphNeeds) {
        for (stack, set) in other.ranges { ranges[stack, default: GlyphRangeSet()].formUnion(set) }
    }

    /// Ranges over every stack.
    public var count: Int { ranges.values.reduce(0) { $0 + $1.count } }
}
