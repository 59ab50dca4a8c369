extension Collection<UInt8> {
    /// Whether these bytes spell `lowercase` in any letter case: header names and URL schemes
    /// are ASCII, and comparing bytes spares a lowercased String for every header of every tile.
    func equalsIgnoringASCIICase(_ lowercase: [UInt8]) -> Bool {
        count == lowercase.count && zip(self, lowercase).allSatisfy { byte, expected in
            (byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte) == expected
        }
    }
}
