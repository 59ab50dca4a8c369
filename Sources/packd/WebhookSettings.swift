import API
import Fetch
import Foundation
import Loop
import Packs
import Webhooks

/// Webhooks in `packd serve`: the dispatcher wired to the API (its wake-up, its address policy,
/// its metrics).
enum WebhookSettings {
    /// The dispatcher of this process, connected to `api`; started by the caller once the server listens.
    static func dispatcher(_ configuration: ServerConfiguration, store: any PackStore, fetcher: Fetcher, api: PackdAPI,
                           loop: EventLoop) -> WebhookDispatcher {
        let owner = "\(ProcessInfo.processInfo.hostName)/\(getpid())/\(WebhookMessageID.random().dropFirst(4).prefix(8))"
        let dispatcher = WebhookDispatcher(loop: loop, store: store, fetcher: fetcher, owner: owner,
                                           configuration: configuration.webhooks, render: WebhookPackDocument.render)
        let metrics = api.webhookMetrics
        dispatcher.onAttempt = { [unowned dispatcher] in metrics.record($0, inFlight: dispatcher.attemptsInFlight) }
        dispatcher.onQueueStatus = { [unowned dispatcher] in metrics.record($0, now: $1, inFlight: dispatcher.attemptsInFlight) }
        api.webhooks.urlPolicy = WebhookURLPolicy(addresses: configuration.upstreamPolicy)
        api.webhooks.retryWindow = RetrySchedule.milliseconds(configuration.webhooks.schedule.maxAge)
        api.webhooks.wake = { [unowned dispatcher] in dispatcher.wake() }
        return dispatcher
    }
}
