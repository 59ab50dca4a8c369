import API
import Foundation
import Logging
import Loop
import Server
import Store
import Testing

/// What `packd serve` builds at start is freed at shutdown: no reference cycle keeps the event
/// publisher (and through it the store's SQLite connection, the loop and the replay ring) alive.
/// `make sanitize` found one as 14 LeakSanitizer reports — the publisher's removal observers held
/// the artifact routes, which reach the publisher back through the pack routes.
@Suite struct APILifetimeTests {
    private final class WeakBox {
        weak var value: AnyObject?
        init(_ value: AnyObject) { self.value = value }
    }

    @Test func anAPIRegisteredClosedAndDroppedIsFreedWithItsPublisherAndStore() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("packd-lifetime-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let thread = try LoopThread()
        defer { thread.shutdown() }
        let loop = thread.loop
        nonisolated(unsafe) var watched: [(String, WeakBox)] = []
        try thread.sync {
            let logger = Logger(label: "lifetime-test") { _ in SwiftLogNoOpLogHandler() }
            let store = try SQLiteStore(path: directory.appendingPathComponent("packd.sqlite").path, loop: loop)
            let api = try PackdAPI(store: store, loop: loop, routes: APIRouteBuilder(authenticator: APIKeyAuthenticator(), cors: .disabled, metrics: PackdMetrics()), logger: logger)
            api.sharing.artifactsDirectory = directory.appendingPathComponent("artifacts").path
            var router = Router()
            api.register(in: &router)
            watched = [("api", WeakBox(api)), ("publisher", WeakBox(api.events)), ("broadcaster", WeakBox(api.events.streams)),
                       ("event log", WeakBox(api.events.log)), ("store", WeakBox(store))]
            // As `packd serve` stops: the streams end, the writer commits and stops.
            api.close()
            store.close()
        }
        // The timers closed above free their handles on the loop's next turn.
        try thread.sync {}
        for (name, box) in watched {
            #expect(box.value == nil, "\(name) outlived the API: a reference cycle")
        }
    }
}
