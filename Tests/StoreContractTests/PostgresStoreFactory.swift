import Foundation
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
    })
}
