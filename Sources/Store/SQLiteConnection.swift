/// A connection to packd's SQLite database, reader or writer: the queries both answer are
/// written once, as extensions of this protocol (`StoreReader`, `StoreReader+…`).
public protocol SQLiteConnection: AnyObject {
    var database: Database { get }
}
