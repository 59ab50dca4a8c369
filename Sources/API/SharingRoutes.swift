import Logging
import Server

/// What the export and import routes share: the store, the settings, and one bound on
/// concurrent transfers (`FileTransferSlots`).
struct SharingContext {
    let store: StoreAccess
    let settings: SharingSettings
    let slots: FileTransferSlots
    let logger: Logger
}

/// The export and import endpoints as one registration.
struct SharingRoutes {
    let store: StoreAccess
    let settings: SharingSettings
    let logger: Logger

    func register(in router: inout Router, using routes: APIRouteBuilder) {
        let context = SharingContext(store: store, settings: settings, slots: FileTransferSlots(limit: settings.concurrentTransfers),
                                     logger: logger)
        ExportRoutes(context).register(in: &router, using: routes)
        ImportRoutes(context).register(in: &router, using: routes)
    }
}
