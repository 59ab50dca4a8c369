import Artifacts
import Loop
import Packs
import Logging
import Server

/// What the export and import routes share: the store, the settings, one bound on concurrent
/// transfers (`FileTransferSlots`), and the pack routes that publish what an import changed.
struct SharingContext {
    let store: any PackStore
    let loop: EventLoop
    let packs: PackRoutes
    let settings: SharingSettings
    let slots: FileTransferSlots
    let logger: Logger
}

/// The export (artifacts and scratch exports) and import endpoints as one registration.
struct SharingRoutes {
    let store: any PackStore
    let loop: EventLoop
    let packs: PackRoutes
    let settings: SharingSettings
    let artifacts: ArtifactCache
    let logger: Logger

    func register(in router: inout Router, using routes: APIRouteBuilder) {
        let context = SharingContext(store: store, loop: loop, packs: packs, settings: settings, slots: FileTransferSlots(limit: settings.concurrentTransfers),
                                     logger: logger)
        let artifactRoutes = ArtifactRoutes(context, cache: artifacts, scratchExports: ExportRoutes(context))
        artifactRoutes.register(in: &router, using: routes)
        // Weak, as the other observers: the router's handlers own the routes, and the publisher
        // reaches them through `packs` — a strong capture here was a cycle (publisher → routes →
        // packs → publisher) that kept the store, the loop and the event ring alive past shutdown.
        packs.events.removalObservers.append { [weak artifactRoutes] in artifactRoutes?.packRemoved($0) }
        ImportRoutes(context).register(in: &router, using: routes)
    }
}
