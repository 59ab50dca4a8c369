import Foundation
import Packs
import Plan
import Store

/// The read connection of a revalidation or an update check, used from the thread pool only
/// (serialised by the lock): pages of stored validators, stored bodies to compare a 200 with,
/// and the stored documents that give back each tile template's scheme and subdomains.
final class RevalidationReader: @unchecked Sendable {
    private let lock = NSLock()
    private let reader: StoreReader

    init(path: String) throws {
        reader = try StoreReader(path: path)
    }

    func resources(packID: Int64, after rowID: Int64, limit: Int) -> Result<[StoredValidators], any Error> {
        lock.withLock { Result { try reader.resourceValidators(packID: packID, afterRowID: rowID, limit: limit) } }
    }

    func tiles(packID: Int64, after rowID: Int64, limit: Int) -> Result<[StoredValidators], any Error> {
        lock.withLock { Result { try reader.tileValidators(packID: packID, afterRowID: rowID, limit: limit) } }
    }

    func updateProbes(packID: Int64) -> Result<[StoredValidators], any Error> {
        lock.withLock { Result { try reader.updateProbes(packID: packID) } }
    }

    /// Whether `body` (as the upstream sent it) is the content stored under `key`, and its
    /// stored form. Compared decoded, so a gzip and a plain copy of the same bytes are the same.
    func compare(_ body: [UInt8], with key: ResourceKey) -> BodyComparison {
        guard let encoded = try? StoredBody.encoding(body) else { return .undecodable }
        let stored = lock.withLock { (try? reader.read(key)) ?? nil }
        guard let storedBody = stored?.body else { return .changed(encoded) }
        if storedBody == encoded { return .same(encoded) }
        guard let old = try? storedBody.decoded(), let new = try? encoded.decoded() else { return .changed(encoded) }
        return old == new ? .same(encoded) : .changed(encoded)
    }

    /// Each tile template of the pack's plan, rebuilt from the stored style and TileJSONs (the
    /// `tiles` table keeps only the template string, not its scheme or subdomains). Templates of
    /// documents that are missing or unreadable are absent: their tiles fall back to the bare
    /// template (`TileURLTemplate(_:)`).
    func tileTemplates(region: RegionDefinition) -> [String: TileURLTemplate] {
        var builder = PlanBuilder(region: region)
        if let styleURL = region.styleURL {
            guard let style = document(.resource(url: styleURL, kind: .style)),
                  (try? builder.addStyle(style)) != nil else { return [:] }
            for url in builder.missingTileJSONURLs {
                if let tileJSON = document(.resource(url: url, kind: .source)) { try? builder.addTileJSON(tileJSON, url: url) }
            }
        }
        var templates: [String: TileURLTemplate] = [:]
        for pyramid in builder.plan.pyramids { templates[pyramid.template.template] = pyramid.template }
        return templates
    }

    private func document(_ key: ResourceKey) -> Data? {
        lock.withLock {
            guard let body = (try? reader.read(key)) ?? nil, let bytes = try? body.body?.decoded() else { return nil }
            return Data(bytes)
        }
    }
}

/// A 200's body against the stored copy.
enum BodyComparison: Sendable {
    /// The stored content, in the stored form of the new body.
    case same(StoredBody)
    /// Other bytes (or nothing was stored): the new stored form.
    case changed(StoredBody)
    /// A gzip body that does not inflate.
    case undecodable
}
