/// One byte range of a `Range: bytes=…` header (RFC 9110 §14.1.2), before the representation's
/// size is known. Pure.
public enum ByteRange: Equatable, Sendable {
    /// `bytes=first-last` (both inclusive).
    case bounded(first: Int, last: Int)
    /// `bytes=first-`: from `first` to the end.
    case from(Int)
    /// `bytes=-length`: the last `length` bytes.
    case suffix(Int)

    /// The single range a `Range` header asks for, or nil when the header is to be ignored (and
    /// the whole representation sent with `200`): another unit, a syntax error, a range whose
    /// last byte precedes its first, or several ranges (packd answers no multipart). RFC 9110
    /// lets a server ignore any of those; none of them is an error.
    public static func parse(_ header: String) -> ByteRange? {
        let text = header.utf8
        guard text.count <= 256, let equals = text.firstIndex(of: UInt8(ascii: "=")) else { return nil }
        let unit = String(decoding: text[..<equals], as: UTF8.self).trimmingSpaces
        guard unit.lowercased() == "bytes" else { return nil }
        let specs = String(decoding: text[text.index(after: equals)...], as: UTF8.self).split(separator: ",", omittingEmptySubsequences: false)
            .map { String($0).trimmingSpaces }
            .filter { !$0.isEmpty }
        guard specs.count == 1, let spec = specs.first else { return nil }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return nil }
        let first = parts[0], last = parts[1]
        switch (first.isEmpty, last.isEmpty) {
        case (true, true): return nil
        case (true, false):
            guard let length = decimal(last) else { return nil }
            return .suffix(length)
        case (false, true):
            guard let start = decimal(first) else { return nil }
            return .from(start)
        case (false, false):
            guard let start = decimal(first), let end = decimal(last), start <= end else { return nil }
            return .bounded(first: start, last: end)
        }
    }

    /// Digits only, at most 18 of them (no sign, no spaces, no overflow).
    private static func decimal(_ text: Substring) -> Int? {
        guard (1...18).contains(text.utf8.count), text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }

    /// The bytes of a representation of `size` bytes this range selects, or nil when none
    /// (`416 Range Not Satisfiable`): a start at or past the end, an empty suffix, an empty file.
    public func resolve(size: Int) -> Range<Int>? {
        switch self {
        case .bounded(let first, let last):
            guard first < size else { return nil }
            return first..<(min(last, size - 1) + 1)
        case .from(let first):
            guard first < size else { return nil }
            return first..<size
        case .suffix(let length):
            guard length > 0, size > 0 else { return nil }
            return max(0, size - length)..<size
        }
    }
}

extension String {
    fileprivate var trimmingSpaces: String {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return String(view)
    }
}
