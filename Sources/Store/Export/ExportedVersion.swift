import Packs

/// A `PackExportRequest` checked against the pack database an export reads (packd's own file, or
/// a cluster node's staged copy with the same tables), inside the export's read transaction: the
/// version exists, is current and still holds the pack's rows, the delta's base is retained —
/// each refusal a precise `ExportError` — and what the file takes from the version: the time
/// written into every row, the region's description, the tileset name.
struct ExportedVersion {
    let pack: Int64
    /// nil: an unversioned export (the rows the pack holds now).
    let version: PackVersion?
    /// A delta's base (`since`): the version the device holds.
    let base: PackVersion?
    /// Every time field the file stores (`modified`, `accessed`): the version's `created_at` (the
    /// pack's `updated_at` for an unversioned export).
    let time: Int64
    let regionDescription: [UInt8]?
    /// MBTiles' and PMTiles' `name`.
    let name: String

    /// `schema`: where the pack database's tables are on `database` (`main`, or the attached `pack`).
    static func resolve(_ request: PackExportRequest, in database: Database,
                        schema: String = "main") throws(ExportError) -> ExportedVersion {
        if let problem = request.problem { throw problem }
        return try ExportError.mapping {
            var row: (version: Int64, name: String, updatedAt: Int64, description: [UInt8]?)?
            try database.cachedStatement("""
                SELECT p.version, p.name, p.updated_at, r.description
                FROM \(schema).packd_packs p JOIN \(schema).regions r ON r.id = p.region_id WHERE p.region_id = ?1
                """).forEachRow([.integer(request.pack)]) { row = ($0.int64(at: 0), $0.string(at: 1) ?? "", $0.int64(at: 2), $0.blob(at: 3)) }
            guard let row else { throw ExportError.packNotFound(request.pack) }
            guard let number = request.version else {
                return ExportedVersion(pack: request.pack, version: nil, base: nil, time: row.updatedAt,
                                       regionDescription: row.description, name: row.name)
            }
            guard number >= 1, number <= row.version else { throw ExportError.unknownVersion(number, current: row.version) }
            guard let version = try VersionQueries.version(number, of: request.pack, in: database, schema: schema) else {
                throw ExportError.versionNotRetained(number, current: row.version)
            }
            guard number == row.version else { throw ExportError.versionSuperseded(number, current: row.version) }
            let changed = try database.cachedStatement(VersionQueries.changedSince(schema: schema))
                .scalarInt([.integer(request.pack), .integer(version.changeBoundary)])
            guard changed == 0 else { throw ExportError.versionChanging(number) }
            var base: PackVersion?
            if let since = request.since {
                guard let found = try VersionQueries.version(since, of: request.pack, in: database, schema: schema) else {
                    throw ExportError.baseNotRetained(since, current: row.version)
                }
                base = found
            }
            return ExportedVersion(pack: request.pack, version: version, base: base, time: version.createdAt,
                                   regionDescription: base?.regionDescription ?? version.regionDescription, name: version.name)
        }
    }
}

extension ExportedVersion {
    /// An archive request checked: its tileset chosen (`request.source`, or the only one), then
    /// its version (cluster mode chooses the tileset before staging, in this order too).
    static func resolveArchive(_ request: PackExportRequest, in database: Database) throws(ExportError)
        -> (ExportedVersion, PackTileSource) {
        if let problem = request.problem { throw problem }
        let source = try PackTileSource.choose(pack: request.pack, urlTemplate: request.source, in: database)
        return (try resolve(request, in: database), source)
    }
}
