import Packs

/// What a MapLibre offline database must contain, object by object and column by column, to be
/// read by packd's merge: exactly schema 6 (or 5, the same without `must_revalidate`), plus
/// SQLite's own bookkeeping objects. Anything else — another table, an index packd did not
/// expect, a trigger or view — is refused rather than ignored.
struct OfflineSchemaShape {
    let columns: [String: Set<String>]
    let indexes: Set<String>

    static func version(_ version: Int64) -> OfflineSchemaShape? {
        var resources: Set<String> = ["id", "url", "kind", "expires", "modified", "etag", "data", "compressed", "accessed"]
        var tiles: Set<String> = ["id", "url_template", "pixel_ratio", "z", "x", "y", "expires", "modified", "etag", "data",
                                  "compressed", "accessed"]
        switch version {
        case 6:
            resources.insert("must_revalidate")
            tiles.insert("must_revalidate")
        case 5:
            break
        default:
            return nil
        }
        return OfflineSchemaShape(
            columns: ["resources": resources, "tiles": tiles, "regions": ["id", "definition", "description"],
                      "region_resources": ["region_id", "resource_id"], "region_tiles": ["region_id", "tile_id"]],
            indexes: OfflineSchema.indexNames)
    }

    /// Checks `schema` (e.g. "main" or "side") of `database`; throws the first difference.
    func check(_ database: Database, schema: String) throws(ImportError) {
        try ValidatedImport.run(database) {
            var triggersOrViews: [String] = []
            var problems: [String] = []
            try database.makeStatement("SELECT type, name, tbl_name FROM \(schema).sqlite_master").forEachRow { row in
                let type = row.string(at: 0) ?? ""
                let name = row.string(at: 1) ?? ""
                let table = row.string(at: 2) ?? ""
                switch type {
                case "trigger", "view":
                    triggersOrViews.append("\(type) \(name)")
                case "table":
                    if columns[name] == nil && name != "sqlite_sequence" && !name.hasPrefix("sqlite_stat") {
                        problems.append("unexpected table \(name)")
                    }
                case "index":
                    let automatic = name.hasPrefix("sqlite_autoindex_") && columns[table] != nil
                    if !automatic && !indexes.contains(name) { problems.append("unexpected index \(name)") }
                default:
                    problems.append("unexpected \(type) \(name)")
                }
            }
            if !triggersOrViews.isEmpty { throw ImportError.triggersOrViews(triggersOrViews.sorted()) }
            if let first = problems.sorted().first { throw ImportError.unexpectedSchema(first) }
            for (table, expected) in columns.sorted(by: { $0.key < $1.key }) {
                var found: Set<String> = []
                try database.makeStatement("SELECT name FROM pragma_table_info(?1, ?2)").forEachRow([.text(table), .text(schema)]) { row in
                    found.insert(row.string(at: 0) ?? "")
                }
                if found.isEmpty { throw ImportError.unexpectedSchema("missing table \(table)") }
                if found != expected {
                    throw ImportError.unexpectedSchema("table \(table) has columns \(found.sorted().joined(separator: ", "))")
                }
            }
            var indexCount = 0
            for index in indexes.sorted() {
                indexCount += Int(try database.scalarInt(
                    "SELECT count(*) FROM \(schema).sqlite_master WHERE type = 'index' AND name = ?1", [.text(index)]) ?? 0)
            }
            if indexCount != indexes.count { throw ImportError.unexpectedSchema("missing indexes") }
        }
    }
}
