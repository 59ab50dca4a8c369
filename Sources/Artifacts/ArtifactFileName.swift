/// Published artifacts are named `<stem>.<sha256 hex>.<extension>`: the rename that publishes a
/// file publishes its digest with it, so serving never rehashes and no sidecar can disagree
/// with its file. Files being built are `.building-<pid>-<unique>` in the same folder and never
/// match. Pure.
public enum ArtifactFileName {
    static let temporaryPrefix = ".building-"

    public static func published(_ key: ArtifactKey, sha256 hex: String) -> String {
        "\(key.stem).\(hex).\(key.format.fileExtension)"
    }

    /// The digest in `name` when it is a published file of `key`, else nil.
    public static func digest(in name: String, of key: ArtifactKey) -> String? {
        let prefix = key.stem + "."
        let suffix = "." + key.format.fileExtension
        guard name.hasPrefix(prefix), name.hasSuffix(suffix), name.utf8.count == prefix.utf8.count + 64 + suffix.utf8.count else {
            return nil
        }
        let hex = String(name.dropFirst(prefix.count).dropLast(suffix.count))
        guard hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else { return nil }
        return hex
    }

    public static func temporary(pid: Int32, unique: String) -> String {
        "\(temporaryPrefix)\(pid)-\(unique)"
    }

    /// The process that is building into a temporary file named `name`, or nil for any other name.
    public static func builder(of name: String) -> Int32? {
        guard name.hasPrefix(temporaryPrefix) else { return nil }
        let rest = name.dropFirst(temporaryPrefix.count)
        guard let dash = rest.firstIndex(of: "-"), let pid = Int32(rest[..<dash]), pid > 0 else { return nil }
        return pid
    }

    /// The version of a `v<N>` folder name.
    public static func version(ofFolder name: String) -> Int64? {
        guard name.hasPrefix("v"), name.count <= 20 else { return nil }
        return Int64(name.dropFirst()).flatMap { $0 >= 0 ? $0 : nil }
    }

    /// The pack of a `pack-<id>` folder name.
    public static func pack(ofFolder name: String) -> Int64? {
        guard name.hasPrefix("pack-"), name.count <= 25 else { return nil }
        return Int64(name.dropFirst(5)).flatMap { $0 > 0 ? $0 : nil }
    }
}
