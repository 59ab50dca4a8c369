import Foundation
import Packs
import Postgres
import PostgresStore
import PostgresTestSupport

extension StoreFactory {
    /// Cluster mode: a database of its own on the test process's PostgreSQL (started from a
    /// temporary directory), this store one node of it.
    static let postgres = StoreFactory(name: "PostgreSQL", open: { loop, existing, batches in
        let url = try existing.map { try PostgresURL($0) } ?? TemporaryPostgres.shared().makeDatabase(prefix: "contract")
        let store = try PostgresStore(url: url, loop: loop, nodeName: "contract", configuration: .init(
            maximumBatchCount: batches.maximumCount, maximumBatchDelay: batches.maximumDelay))
        return (store, url.description)
    }, remove: { location in
        guard let url = try? PostgresURL(location) else { return }
        try? TemporaryPostgres.shared().dropDatabase(url)
    }, performPromisingNoChange: { store, operation, done in
        (store as! PostgresStore).writer.perform({ try operation($0) }, changesPacks: false) { _ in done() }
    }, fillStorage: { writer, full in
        // The error a server whose disk is full answers an insert with (SQLSTATE 53100), raised
        // by a trigger: the database's disk is the server's, not the test's to fill.
        let connection = (writer as! PostgresStoreConnection).connection
        if full {
            try connection.execute("""
                CREATE FUNCTION contract_disk_full() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = 'disk_full'; END; $$;
                CREATE TRIGGER contract_disk_full BEFORE INSERT ON tiles FOR EACH STATEMENT EXECUTE FUNCTION contract_disk_full();
                """)
        } else {
            try connection.execute("DROP TRIGGER contract_disk_full ON tiles; DROP FUNCTION contract_disk_full()")
        }
    })
}
