/// A store's pack versions, read (see `PackVersion`). Every method runs on a thread that may
/// block, inside `PackStore.read` or `write`.
///
/// Contract (the store contract suite checks it for every store): a pack has version 0 until a
/// download first completes it, then 1; a later completion (a refresh, or a resumed download)
/// cuts the next version only when the pack's content changed since the last one, which includes
/// rows another pack's refresh changed; a version's counts are exact; the latest `keep` versions
/// are retained and the others forgotten, their numbers never reused.
public protocol PackVersionRepository: AnyObject {
    /// The pack's retained versions, newest first; empty for a pack at version 0 or no such pack.
    func versions(of packID: Int64) throws -> [PackVersion]
    /// One retained version, nil when it is not retained (or never existed).
    func version(_ version: Int64, of packID: Int64) throws -> PackVersion?
}

extension PackVersionRepository {
    /// Where `version` stands for the pack (`PackVersionStanding`), nil when there is no such pack.
    public func standing(of version: Int64, in pack: PackRecord) throws -> PackVersionStanding {
        let retained = try versions(of: pack.id).map(\.version)
        return PackVersionStanding(version, current: pack.version, retained: retained)
    }
}
