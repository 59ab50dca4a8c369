import Foundation
import Packs
import Testing
@testable import Webhooks

/// Signing as the Standard Webhooks specification defines it, proven with its published test
/// vector (the reference libraries' own test), and the secrets' form.
@Suite struct WebhookSignatureTests {
    @Test func theSpecificationsTestVectorSignsExactly() throws {
        let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let signature = WebhookSignature.sign(messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                              body: Array(#"{"test": 2432232314}"#.utf8), secret: secret)
        #expect(signature == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
    }

    @Test func aRotatedSecretSignsBesideTheNewOneSpaceSeparated() throws {
        let old = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        let new = WebhookSecret.generate()
        let body = Array(#"{"test": 2432232314}"#.utf8)
        let header = WebhookSignature.header(messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330, body: body,
                                             secrets: [new, old])
        let parts = header.split(separator: " ").map(String.init)
        #expect(parts.count == 2)
        #expect(parts[1] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
        #expect(parts[0] == WebhookSignature.sign(messageID: "msg_p5jXN8AQM9LWM0D4loKWxJek", timestamp: 1_614_265_330,
                                                  body: body, secret: new))
        #expect(parts[0] != parts[1])
    }

    @Test func generatedSecretsAreWhsecWith32RandomBytesAndReadBack() throws {
        let first = WebhookSecret.generate()
        let second = WebhookSecret.generate()
        #expect(first.text.hasPrefix("whsec_") && first.key.count == 32)
        #expect(first != second, "two secrets are never the same")
        #expect(WebhookSecret(first.text) == first)
        #expect(WebhookSecret("whsec_") == nil && WebhookSecret("whsec_not base64!") == nil)
    }

    @Test func theBodyIsTypeTimestampAndDataWithTheStandardHeaders() throws {
        let delivery = ClaimedWebhookDelivery(
            deliveryID: 7, endpointID: 3, url: "https://example.com/hook", secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
            messageID: "msg_abc", type: .packCompleted, packID: 42, data: "", messageCreatedAt: 1_614_265_330_250,
            createdAt: 1_614_265_330_250, attempts: 2, retryUntil: nil)
        let request = WebhookRequest(delivery, data: Array(#"{"id":42}"#.utf8), now: 1_614_265_999_999)
        let body = String(decoding: request.body, as: UTF8.self)
        #expect(body == #"{"data":{"id":42},"timestamp":"2021-02-25T15:02:10.250Z","type":"pack.completed"}"#)
        let object = try JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any]
        #expect(object?["type"] as? String == "pack.completed")
        let headers = Dictionary(uniqueKeysWithValues: request.headers.map { ($0.name, $0.value) })
        #expect(headers["webhook-id"] == "msg_abc")
        #expect(headers["webhook-timestamp"] == "1614265999", "the attempt's time, whole seconds")
        let secret = try #require(WebhookSecret("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"))
        #expect(headers["webhook-signature"] == WebhookSignature.sign(messageID: "msg_abc", timestamp: 1_614_265_999,
                                                                      body: request.body, secret: secret))
    }
}
