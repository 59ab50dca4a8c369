/// Hex as the published test vectors write it.
func bytes(hex: String) -> [UInt8] {
    let digits = Array(hex.utf8).map { c -> UInt8 in
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        default: fatalError("not a lower-case hex digit in a test vector")
        }
    }
    precondition(digits.count % 2 == 0, "odd hex in a test vector")
    return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
}

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}
