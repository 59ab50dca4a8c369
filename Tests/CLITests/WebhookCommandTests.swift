import Foundation
import PackdTestSupport
import Packs
import Testing

/// `packd webhooks add|list|show|ping|deliveries|remove` as scripts run them against a real
/// `packd serve`: JSON lines that decode as Packs' wire types, the secret printed once, exit
/// statuses a script branches on.
@Suite struct WebhookCommandTests {
    @Test func addListShowPingDeliveriesRemove() throws {
        let receiver = try TestUpstream { _ in .respond(status: 204) }
        defer { receiver.stop() }
        let server = try PackdServer()
        defer { server.remove() }
        let at = CommandLineTests.server(server)
        let added = try PackdCommand.run(["webhooks", "add"] + at + ["--url", receiver.url("/hook"), "--events", "pack.completed,webhook.disabled",
                                                                      "--pack-ids", "4,5", "--description", "cli"])
        #expect(added.status == 0, "\(added.stderr)")
        let endpoint = try JSONDecoder().decode(WebhookEndpoint.self, from: Data(added.stdout.utf8))
        #expect(endpoint.secret?.hasPrefix("whsec_") == true && endpoint.events == ["pack.completed", "webhook.disabled"])
        #expect(endpoint.packIDs == [4, 5] && endpoint.description == "cli")

        let listed = try PackdCommand.run(["webhooks", "list"] + at)
        let rows = try listed.stdout.split(separator: "\n").map { try JSONDecoder().decode(WebhookEndpoint.self, from: Data($0.utf8)) }
        #expect(listed.status == 0 && rows.map(\.id) == [endpoint.id] && rows[0].secret == nil)
        #expect(!listed.stdout.contains(endpoint.secret ?? "?"), "the secret is printed once, by add")
        let shown = try PackdCommand.run(["webhooks", "show", "\(endpoint.id)"] + at)
        #expect(shown.status == 0 && (try? JSONDecoder().decode(WebhookEndpoint.self, from: Data(shown.stdout.utf8)))?.url == receiver.url("/hook"))

        let pinged = try PackdCommand.run(["webhooks", "ping", "\(endpoint.id)"] + at)
        let ping = try JSONDecoder().decode(WebhookDelivery.self, from: Data(pinged.stdout.utf8))
        #expect(pinged.status == 0 && ping.type == .webhookPing)
        #expect(eventually { receiver.requests.contains { $0.headers["webhook-id"] == ping.eventID } })
        var delivered: [WebhookDelivery] = []
        #expect(eventually {
            let run = try? PackdCommand.run(["webhooks", "deliveries", "\(endpoint.id)"] + at)
            delivered = (run?.stdout.split(separator: "\n") ?? []).compactMap { try? JSONDecoder().decode(WebhookDelivery.self, from: Data($0.utf8)) }
            return delivered.first?.state == .delivered
        })
        #expect(delivered.map(\.eventID) == [ping.eventID] && delivered.first?.attempts == 1)

        let refused = try PackdCommand.run(["webhooks", "add"] + at + ["--url", "http://169.254.169.254/", "--events", "*"])
        #expect(refused.status == 64 && refused.stderr.contains("/url"), "\(refused.stderr)")
        #expect(try PackdCommand.run(["webhooks", "remove", "\(endpoint.id)"] + at).status == 0)
        #expect(try PackdCommand.run(["webhooks", "show", "\(endpoint.id)"] + at).status == 64)
    }
}
