import CCrypto
import Foundation

/// SHA-256 of byte arrays and of whole files (libcrypto), hex and base64. The file form reads in
/// 1 MiB blocks: memory stays flat whatever the file's size.
public enum Digest {
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        let hashed = bytes.withUnsafeBufferPointer { EVP_Digest($0.baseAddress, $0.count, &digest, &length, EVP_sha256(), nil) }
        precondition(hashed == 1 && length == 32, "libcrypto could not compute SHA-256")
        return digest
    }

    /// The SHA-256 of the open file `descriptor` from its start, and its size. Blocking.
    public static func sha256(ofFile descriptor: Int32) throws(ArtifactError) -> (digest: [UInt8], size: Int) {
        guard let context = EVP_MD_CTX_new() else { throw .file("libcrypto could not allocate a digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestInit_ex(context, EVP_sha256(), nil) == 1 else { throw .file("libcrypto could not start SHA-256") }
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
            guard EVP_DigestUpdate(context, block.baseAddress, count) == 1 else { throw .file("libcrypto could not hash") }
            offset += count
        }
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        guard EVP_DigestFinal_ex(context, &digest, &length) == 1, length == 32 else { throw .file("libcrypto could not finish SHA-256") }
        return (digest, offset)
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
