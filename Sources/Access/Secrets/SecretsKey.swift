import Cryptography
import Foundation

/// A 256-bit AES key that seals secrets at rest (`--secrets-key-file`), and its id: the first 8
/// base64url characters (48 bits) of SHA-256 over `packd-secrets-key-id:` and the key — derived,
/// so no one has to name keys, and a one-way function of a 256-bit key, so it tells nothing of it.
/// The id is stored with every sealed value, so packd knows which key opens it.
public struct SecretsKey: Sendable, CustomStringConvertible, CustomReflectable {
    public let id: String
    let key: AES256GCM.Key

    public init(bytes: [UInt8]) throws(CryptographyError) {
        key = try AES256GCM.Key(bytes: bytes)
        id = String(Base64URL.encode(SHA256.hash(Array("packd-secrets-key-id:".utf8) + bytes)).prefix(8))
    }

    /// A new key (`packd secrets generate-key` writes its base64).
    public static func generate() throws(CryptographyError) -> (key: SecretsKey, base64: String) {
        let bytes = try SecureRandom.bytes(count: AES256GCM.keyByteCount)
        return (try SecretsKey(bytes: bytes), Data(bytes).base64EncodedString())
    }

    public var description: String { "SecretsKey(id: \(id))" }
    public var customMirror: Mirror { Mirror(self, children: ["id": id], displayStyle: .struct) }
}

/// The keys of a key file: the first seals, all of them open.
///
/// The file holds either exactly 32 raw bytes (one key), or text: one key per line in base64
/// (standard or URL alphabet, padding optional), blank lines and lines starting with `#`
/// ignored. The first key is the current one; the lines after it are earlier keys, kept so values
/// sealed under them still open until `packd secrets rotate` has sealed them again under the
/// current key. Rotating: put the new key on the first line, keep the old below it, run
/// `packd secrets rotate`, then drop the old line.
public struct SecretsKeyring: Sendable {
    public static let maximumFileSize = 64 << 10

    public let current: SecretsKey
    public let previous: [SecretsKey]

    public init(current: SecretsKey, previous: [SecretsKey] = []) {
        self.current = current
        self.previous = previous.filter { $0.id != current.id }
    }

    /// Why a key file is unusable; names the file and line, never a key.
    public struct FileError: Error, Equatable, Sendable, CustomStringConvertible {
        public let description: String
    }

    /// The keys in `contents`, read from `source` (named in errors).
    public init(fileContents contents: [UInt8], source: String) throws(FileError) {
        guard contents.count <= Self.maximumFileSize else {
            throw FileError(description: "\(source): a secrets key file is at most \(Self.maximumFileSize) bytes")
        }
        if contents.count == AES256GCM.keyByteCount {
            do { self.init(current: try SecretsKey(bytes: contents)) } catch { throw FileError(description: "\(source): \(error)") }
            return
        }
        guard let text = String(bytes: contents, encoding: .utf8) else {
            throw FileError(description: "\(source): expected 32 raw bytes, or base64 keys one per line")
        }
        var keys: [SecretsKey] = []
        for (number, line) in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline).enumerated() {
            let entry = line.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty || entry.hasPrefix("#") { continue }
            guard let bytes = Self.decodeBase64(entry), bytes.count == AES256GCM.keyByteCount else {
                throw FileError(description: "\(source) line \(number + 1): a key is 32 bytes in base64 (44 characters)")
            }
            do { keys.append(try SecretsKey(bytes: bytes)) } catch { throw FileError(description: "\(source) line \(number + 1): \(error)") }
        }
        guard let first = keys.first else { throw FileError(description: "\(source): no key in the file") }
        guard Set(keys.map(\.id)).count == keys.count else { throw FileError(description: "\(source): the same key is listed twice") }
        self.init(current: first, previous: Array(keys.dropFirst()))
    }

    /// The keys in the file at `path`.
    public static func load(path: String) throws(FileError) -> SecretsKeyring {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw FileError(description: "\(path): cannot open the secrets key file") }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: maximumFileSize + 1)) ?? nil
        guard let data else { throw FileError(description: "\(path): cannot read the secrets key file") }
        return try SecretsKeyring(fileContents: Array(data), source: path)
    }

    func key(id: String) -> SecretsKey? {
        current.id == id ? current : previous.first { $0.id == id }
    }

    private static func decodeBase64(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
