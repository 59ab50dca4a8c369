/// Queries counting rows a MapLibre client could not have written. SQLite stores any type in any
/// column, so an upload that passes the schema check can still carry text zooms, negative
/// coordinates or huge blobs; merged, they would break exports and serving later. `?1` is the
/// largest blob accepted. Resource kinds are MapLibre's `Resource::Kind`, 0 (`Unknown`, which its
/// `putResourceWithUrl`/`preloadData` ambient writes use) to 7.
enum OfflineRowChecks {
    static let queries: [(String, String)] = [
        ("tiles with invalid coordinates, types or sizes", """
            SELECT count(*) FROM tiles WHERE typeof(url_template) != 'text' OR typeof(pixel_ratio) != 'integer'
              OR typeof(z) != 'integer' OR typeof(x) != 'integer' OR typeof(y) != 'integer'
              OR z < 0 OR z > 30 OR x < 0 OR y < 0 OR x >= (1 << z) OR y >= (1 << z)
              OR pixel_ratio < 1 OR pixel_ratio > 4 OR compressed NOT IN (0, 1)
              OR typeof(data) NOT IN ('blob', 'null') OR length(data) > ?1
              OR typeof(accessed) != 'integer'
              OR typeof(expires) NOT IN ('integer', 'null') OR typeof(modified) NOT IN ('integer', 'null')
            """),
        ("resources with invalid kinds, types or sizes", """
            SELECT count(*) FROM resources WHERE typeof(url) != 'text' OR typeof(kind) != 'integer'
              OR kind < 0 OR kind > 7 OR compressed NOT IN (0, 1)
              OR typeof(data) NOT IN ('blob', 'null') OR length(data) > ?1
              OR typeof(accessed) != 'integer'
              OR typeof(expires) NOT IN ('integer', 'null') OR typeof(modified) NOT IN ('integer', 'null')
            """),
        ("regions with a non-text definition", """
            SELECT count(*) FROM regions WHERE typeof(definition) != 'text' OR length(definition) > ?1
              OR length(description) > ?1
            """),
    ]
}
