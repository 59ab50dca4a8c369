import Foundation

/// The test vectors `scripts/verify_access.py vectors` made with the reference libraries (PyJWT,
/// jwcrypto, `cryptography`, the standard library's hmac and zlib), committed so `make test`
/// needs no Python.
enum Vectors {
    static func json(_ name: String) throws -> [String: Any] {
        guard let url = Bundle.module.url(forResource: name, withExtension: "json", subdirectory: "Vectors") else {
            throw CocoaError(.fileNoSuchFile)
        }
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: url))
        guard let document = object as? [String: Any] else { throw CocoaError(.fileReadCorruptFile) }
        return document
    }

    static func bytes(hex: String) -> [UInt8] {
        let digits = Array(hex.utf8).map { $0 <= 0x39 ? $0 - 0x30 : $0 - 0x61 + 10 }
        return stride(from: 0, to: digits.count, by: 2).map { digits[$0] << 4 | digits[$0 + 1] }
    }

    static func data(_ object: Any) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object))
    }
}
