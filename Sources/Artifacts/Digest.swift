import Cryptography
import Foundation

/// SHA-256 of byte arrays and of whole files (`Cryptography.SHA256`), hex and base64. The file
/// form reads in 1 MiB blocks: memory stays flat whatever the file's size.
public enum Digest {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        SHA256.hash(bytes)
    }

    /// The SHA-256 of the open file `descriptor` from its start, and its size. Blocking.
    public static func sha256(ofFile descriptor: Int32) throws(ArtifactError) -> (digest: [UInt8], size: Int) {
        let hasher: SHA256.Hasher
        do { hasher = try SHA256.Hasher() } catch { throw .file("hashing the artifact: \(error)") }
        let block = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { block.deallocate() }
        var offset = 0
        while true {
            let count = pread(descriptor, block.baseAddress, block.count, off_t(offset))
            if count < 0 {
                if errno == EINTR { continue }
                throw .file("reading the artifact to hash it: \(String(cString: strerror(errno)))")
            }
            if count == 0 { break }
            do { try hasher.update(UnsafeRawBufferPointer(rebasing: block[..<count])) } catch { throw .file("hashing the artifact: \(error)") }
            offset += count
        }
        do { return (try hasher.finalize(), offset) } catch { throw .file("hashing the artifact: \(error)") }
    }

    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 15)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The bytes of lower- or upper-case hex (pairs of digits; anything else is skipped).
    public static func bytes(hex: String) -> [UInt8] {
        func value(_ c: UInt8) -> UInt8? {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: nil
            }
        }
        let digits = hex.utf8.compactMap(value)
        return stride(from: 0, to: digits.count - 1, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    public static func base64(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString()
    }
}

extension [UInt8] {
    var hex: String { Digest.hex(self) }
}
