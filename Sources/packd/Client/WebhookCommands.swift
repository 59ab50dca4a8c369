import ArgumentParser
import Foundation
import Packs

/// `packd webhooks …`: the endpoints a running packd notifies (admin role), for scripts and
/// terminals. JSON documents, one per line, when not on a terminal.
struct WebhooksCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhooks", abstract: "Manage the webhook endpoints of a running packd (admin key).",
        subcommands: [WebhookAdd.self, WebhookList.self, WebhookShow.self, WebhookRemove.self, WebhookPing.self, WebhookDeliveries.self])
}

/// The server, the output and one endpoint's id.
struct WebhookReference: ParsableArguments {
    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup var output: OutputOptions
    @Argument(help: "The webhook's id.") var webhookID: Int64
}

/// `packd webhooks add --url URL [--events a,b] [--pack-ids 1,2] [--description TEXT]`.
struct WebhookAdd: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Register a webhook endpoint; prints its signing secret, shown this once.")

    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup var output: OutputOptions
    @Option(help: "The endpoint's http(s) URL.") var url: String
    @Option(help: "Comma-separated event types (pack.completed, pack.failed, pack.version_created, pack.removed, pack.tile_limit_exceeded, pack.update_available, webhook.disabled), or * for all.")
    var events = "*"
    @Option(name: .customLong("pack-ids"), help: "Comma-separated pack ids: only their events.") var packIDs: String?
    @Option(help: "A note for people.") var description: String?

    func run() throws {
        var ids: [Int64]?
        if let packIDs {
            ids = try packIDs.split(separator: ",").map { text in
                guard let id = Int64(text.trimmingCharacters(in: .whitespaces)) else {
                    throw ValidationError("--pack-ids takes pack ids separated by commas")
                }
                return id
            }
        }
        let body = WebhookCreation(url: url, events: events.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) },
                                   packIDs: ids, description: description)
        try ClientExit.run("webhooks add") {
            let created = try connection.client().send(WebhookEndpoint.self, "POST", "/v1/webhooks", json: body)
            guard output.forPerson else { return PackText.printJSON(created) }
            Terminal.standardOutput(WebhookText.details(created)
                + "secret: \(created.secret ?? "")\n(shown this once: keep it where the receiver verifies signatures)\n")
        }
    }
}

/// `packd webhooks list`.
struct WebhookList: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the webhook endpoints.")

    @OptionGroup var connection: ServerConnectionOptions
    @OptionGroup var output: OutputOptions

    func run() throws {
        try ClientExit.run("webhooks list") {
            let list = try connection.client().get(WebhookEndpointList.self, "/v1/webhooks")
            guard output.forPerson else { return list.webhooks.forEach(PackText.printJSON) }
            Terminal.standardOutput(WebhookText.rows(list.webhooks))
        }
    }
}

/// `packd webhooks show ID`: the endpoint and its latest deliveries.
struct WebhookShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show a webhook endpoint.")

    @OptionGroup var webhook: WebhookReference

    func run() throws {
        try ClientExit.run("webhooks show") {
            let endpoint = try webhook.connection.client().get(WebhookEndpoint.self, "/v1/webhooks/\(webhook.webhookID)")
            guard webhook.output.forPerson else { return PackText.printJSON(endpoint) }
            Terminal.standardOutput(WebhookText.details(endpoint))
        }
    }
}

/// `packd webhooks remove ID`: from a terminal only with `--yes`.
struct WebhookRemove: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a webhook endpoint and its deliveries.")

    @OptionGroup var connection: ServerConnectionOptions
    @Flag(help: "Remove without a second thought, also from a terminal.") var yes = false
    @Argument(help: "The webhook's id.") var webhookID: Int64

    func run() throws {
        try connection.delete("/v1/webhooks/\(webhookID)", confirmed: yes, command: "webhooks remove", what: "webhook \(webhookID)",
                              done: "removed")
    }
}

/// `packd webhooks ping ID`: a `webhook.ping` to the endpoint; prints its delivery.
struct WebhookPing: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "ping", abstract: "Send a webhook.ping to an endpoint.")

    @OptionGroup var webhook: WebhookReference

    func run() throws {
        try ClientExit.run("webhooks ping") {
            let delivery = try webhook.connection.client().send(WebhookDelivery.self, "POST", "/v1/webhooks/\(webhook.webhookID)/ping")
            guard webhook.output.forPerson else { return PackText.printJSON(delivery) }
            Terminal.standardOutput("ping queued: delivery \(delivery.id), webhook-id \(delivery.eventID)\n")
        }
    }
}

/// `packd webhooks deliveries ID`: the newest deliveries first.
struct WebhookDeliveries: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "deliveries", abstract: "List a webhook endpoint's deliveries, newest first.")

    @OptionGroup var webhook: WebhookReference
    @Option(help: "How many (1 to 500).") var limit = 50

    func validate() throws {
        guard (1...500).contains(limit) else { throw ValidationError("--limit must be from 1 to 500") }
    }

    func run() throws {
        try ClientExit.run("webhooks deliveries") {
            let page = try webhook.connection.client().get(WebhookDeliveryList.self,
                                                           "/v1/webhooks/\(webhook.webhookID)/deliveries?limit=\(limit)")
            guard webhook.output.forPerson else { return page.deliveries.forEach(PackText.printJSON) }
            Terminal.standardOutput(WebhookText.deliveryRows(page.deliveries))
        }
    }
}

/// Webhooks as a person reads them.
enum WebhookText {
    static func rows(_ endpoints: [WebhookEndpoint]) -> String {
        var text = "ID      ENABLED   EVENTS                          URL\n"
        for endpoint in endpoints {
            let enabled = endpoint.enabled ? "yes" : "no (\(endpoint.disabledReason ?? "?"))"
            text += pad(String(endpoint.id), 8) + pad(enabled, 10) + pad(endpoint.events.joined(separator: ","), 32) + endpoint.url + "\n"
        }
        return text
    }

    static func details(_ endpoint: WebhookEndpoint) -> String {
        var text = "webhook \(endpoint.id): \(endpoint.url)\n"
        text += "events: \(endpoint.events.joined(separator: ", "))"
        if let packIDs = endpoint.packIDs { text += " (packs \(packIDs.map(String.init).joined(separator: ", ")))" }
        text += "\nenabled: \(endpoint.enabled ? "yes" : "no, \(endpoint.disabledReason ?? "")")\n"
        if !endpoint.description.isEmpty { text += "description: \(endpoint.description)\n" }
        if let until = endpoint.previousSecretExpiresAt { text += "the previous secret signs too until \(until)\n" }
        return text
    }

    static func deliveryRows(_ deliveries: [WebhookDelivery]) -> String {
        var text = "ID      STATE      TRIES  LAST    TYPE                       EVENT ID                        WHEN\n"
        for delivery in deliveries {
            let last = delivery.lastStatus.map(String.init) ?? delivery.lastError ?? "-"
            let when = delivery.deliveredAt.map { "delivered \($0)" } ?? delivery.nextAttemptAt.map { "next \($0)" } ?? "-"
            text += pad(String(delivery.id), 8) + pad(delivery.state.rawValue, 11) + pad(String(delivery.attempts), 7) + pad(last, 8)
                + pad(delivery.type.rawValue, 27) + pad(delivery.eventID, 32) + when + "\n"
        }
        return text
    }

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }
}
