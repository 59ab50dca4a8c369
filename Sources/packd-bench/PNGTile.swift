import CZlib

/// A real 256 × 256 RGB PNG of about `bytes` bytes (noise in the top rows, flat below), so every
/// client — MapProxy included, which reads what it caches — gets a tile it accepts.
enum PNGTile {
    static func make(bytes: Int) -> [UInt8] {
        let side = 256
        let noisyRows = max(1, min(side, bytes / (side * 3)))
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        var raw: [UInt8] = []
        raw.reserveCapacity(side * (side * 3 + 1))
        for row in 0..<side {
            raw.append(0)  // filter: none
            for column in 0..<(side * 3) {
                if row < noisyRows {
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    raw.append(UInt8(truncatingIfNeeded: seed >> 33))
                } else {
                    raw.append(UInt8(truncatingIfNeeded: column / 3 + row))
                }
            }
        }
        var compressedLength = compressBound(uLong(raw.count))
        var compressed = [UInt8](repeating: 0, count: Int(compressedLength))
        _ = compress2(&compressed, &compressedLength, raw, uLong(raw.count), 6)
        compressed.removeSubrange(Int(compressedLength)...)

        var header: [UInt8] = []
        header += bigEndian(UInt32(side)) + bigEndian(UInt32(side))
        header += [8, 2, 0, 0, 0]  // 8-bit RGB, deflate, no filter method, no interlace
        return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", header) + chunk("IDAT", compressed)
            + chunk("IEND", [])
    }

    private static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let body = Array(type.utf8) + data
        let crc = body.withUnsafeBufferPointer { UInt32(crc32(0, $0.baseAddress, uInt($0.count))) }
        return bigEndian(UInt32(data.count)) + body + bigEndian(crc)
    }

    private static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8),
         UInt8(truncatingIfNeeded: value)]
    }
}
