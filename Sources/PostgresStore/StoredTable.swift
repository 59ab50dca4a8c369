import Packs
import Postgres

/// One of MapLibre's two row tables as a batch writes it — `tiles` (keyed by template, ratio and
/// coordinates) or `resources` (keyed by URL) — with its link table. The batch statements are
/// the same shape for both: a whole batch's keys travel as arrays (`unnest`), so a batch costs a
/// handful of statements, not several per row.
enum StoredTable {
    case tiles
    case resources

    var linkTable: String { self == .tiles ? "region_tiles" : "region_resources" }
    var linkColumn: String { self == .tiles ? "tile_id" : "resource_id" }
    var name: String { self == .tiles ? "tiles" : "resources" }

    /// `$1…` the keys (see `keyParameters`); rows: ordinal (1-based), id, stored size, whether it
    /// has a body.
    var lookupSQL: String {
        switch self {
        case .tiles:
            return """
                SELECT k.n, t.id, coalesce(octet_length(t.data), 0)::int8, t.data IS NOT NULL
                FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int8[]) WITH ORDINALITY AS k(tid, r, z, y, x, n)
                JOIN tiles t ON t.template_id = k.tid AND t.pixel_ratio = k.r AND t.z = k.z AND t.y = k.y AND t.x = k.x
                """
        case .resources:
            return """
                SELECT k.n, r.id, coalesce(octet_length(r.data), 0)::int8, r.data IS NOT NULL
                FROM unnest($1::text[]) WITH ORDINALITY AS k(url, n) JOIN resources r ON r.url = k.url
                """
        }
    }

    /// Keys, then `expires, modified, etag, data, compressed, must_revalidate` and `accessed`
    /// (and `kind`); rows: ordinal of each inserted row (1-based). A key another transaction
    /// inserted meanwhile is skipped (`ON CONFLICT DO NOTHING`): the caller looks it up again.
    var insertSQL: String {
        switch self {
        case .tiles:
            return """
                WITH k AS (SELECT * FROM unnest($1::int8[], $2::int8[], $3::int8[], $4::int8[], $5::int8[], $6::int8[],
                                                $7::int8[], $8::text[], $9::bytea[], $10::bool[], $11::bool[])
                                      WITH ORDINALITY AS k(tid, r, z, y, x, expires, modified, etag, data, compressed, mr, n)),
                inserted AS (
                  INSERT INTO tiles (template_id, pixel_ratio, z, y, x, expires, modified, etag, data, compressed, accessed,
                                     must_revalidate)
                  SELECT tid, r, z, y, x, expires, modified, etag, data, compressed, $12, mr FROM k ORDER BY n
                  ON CONFLICT (template_id, pixel_ratio, z, y, x) DO NOTHING
                  RETURNING id, template_id, pixel_ratio, z, y, x)
                SELECT k.n, i.id FROM inserted i JOIN k ON k.tid = i.template_id AND k.r = i.pixel_ratio AND k.z = i.z
                  AND k.y = i.y AND k.x = i.x
                """
        case .resources:
            return """
                WITH k AS (SELECT * FROM unnest($1::text[], $2::int8[], $3::int8[], $4::text[], $5::bytea[], $6::bool[],
                                                $7::bool[], $8::int8[])
                                      WITH ORDINALITY AS k(url, expires, modified, etag, data, compressed, mr, kind, n)),
                inserted AS (
                  INSERT INTO resources (url, expires, modified, etag, data, compressed, accessed, must_revalidate, kind)
                  SELECT url, expires, modified, etag, data, compressed, $9, mr, kind FROM k ORDER BY n
                  ON CONFLICT (url) DO NOTHING
                  RETURNING id, url)
                SELECT k.n, i.id FROM inserted i JOIN k ON k.url = i.url
                """
        }
    }

    /// `$1` ids, then `modified, etag, expires, must_revalidate, data, compressed` (and `kind`),
    /// and `accessed`.
    var updateSQL: String {
        switch self {
        case .tiles:
            return """
                UPDATE tiles t SET modified = u.modified, etag = u.etag, expires = u.expires, must_revalidate = u.mr,
                  accessed = $7, data = u.data, compressed = u.compressed
                FROM unnest($1::int8[], $2::int8[], $3::text[], $4::int8[], $5::bool[], $6::bytea[], $8::bool[])
                  AS u(id, modified, etag, expires, mr, data, compressed)
                WHERE t.id = u.id
                """
        case .resources:
            return """
                UPDATE resources t SET modified = u.modified, etag = u.etag, expires = u.expires, must_revalidate = u.mr,
                  accessed = $7, data = u.data, compressed = u.compressed, kind = u.kind
                FROM unnest($1::int8[], $2::int8[], $3::text[], $4::int8[], $5::bool[], $6::bytea[], $8::bool[], $9::int8[])
                  AS u(id, modified, etag, expires, mr, data, compressed, kind)
                WHERE t.id = u.id
                """
        }
    }

    /// A 304: only `accessed`, `expires` and `must_revalidate` change.
    var notModifiedSQL: String {
        """
        UPDATE \(name) t SET accessed = $4, expires = u.expires, must_revalidate = u.mr
        FROM unnest($1::int8[], $2::int8[], $3::bool[]) AS u(id, expires, mr) WHERE t.id = u.id
        """
    }

    /// A 200 whose content equals the stored copy: the validators change, the body stays.
    /// `$1` ids, then `modified, etag, expires, must_revalidate`, and `accessed`.
    var unchangedBodySQL: String {
        """
        UPDATE \(name) t SET modified = u.modified, etag = u.etag, expires = u.expires, must_revalidate = u.mr, accessed = $6
        FROM unnest($1::int8[], $2::int8[], $3::text[], $4::int8[], $5::bool[]) AS u(id, modified, etag, expires, mr)
        WHERE t.id = u.id
        """
    }

    /// Numbers rows' content as changed (`$1` distinct ids, ascending), each with the next value
    /// of the store's change sequence.
    var recordChangesSQL: String {
        """
        INSERT INTO packd_\(self == .tiles ? "tile" : "resource")_changes (\(linkColumn), change)
        SELECT id, nextval('packd_changes') FROM unnest($1::int8[]) AS u(id) ORDER BY id
        ON CONFLICT (\(linkColumn)) DO UPDATE SET change = excluded.change
        """
    }

    /// Locks rows about to be linked, in id order: two nodes linking the same row to different
    /// packs take turns, so each sees whether the other linked it first (the distinct-tile count
    /// and the ambient size stay exact).
    var lockSQL: String { "SELECT id FROM \(name) WHERE id = ANY($1) ORDER BY id FOR UPDATE" }

    var existingLinksSQL: String { "SELECT \(linkColumn), region_id FROM \(linkTable) WHERE \(linkColumn) = ANY($1)" }

    var insertLinksSQL: String {
        """
        INSERT INTO \(linkTable) (region_id, \(linkColumn)) SELECT * FROM unnest($1::int8[], $2::int8[])
        ON CONFLICT DO NOTHING RETURNING region_id, \(linkColumn)
        """
    }

    /// Adds each row's size change to the progress of every pack linking it.
    var adjustLinkedBytesSQL: String {
        let tileBytes = self == .tiles ? ", completed_tile_bytes = completed_tile_bytes + d.delta" : ""
        return """
            UPDATE packd_progress p SET completed_bytes = completed_bytes + d.delta\(tileBytes)
            FROM (SELECT l.region_id, sum(u.delta)::int8 AS delta FROM unnest($1::int8[], $2::int8[]) AS u(id, delta)
                  JOIN \(linkTable) l ON l.\(linkColumn) = u.id GROUP BY l.region_id) d
            WHERE p.pack_id = d.region_id
            """
    }

    var linkedAmongSQL: String { "SELECT DISTINCT \(linkColumn) FROM \(linkTable) WHERE \(linkColumn) = ANY($1)" }
}
