import Foundation
import Packs
import Server
import Webhooks

/// The bodies of `POST /v1/webhooks` and `PATCH /v1/webhooks/{id}`, validated field by field:
/// every problem is collected with its JSON pointer, so a client fixes its request in one round.
struct WebhookRequestBody {
    /// Event lists, package filters and descriptions are bounded: they are stored and matched
    /// against every pack change.
    static let maximumEvents = 16
    static let maximumPackIDs = 1000
    static let maximumDescription = 500

    var url: String?
    var events: [String]?
    /// `.some(nil)`: `pack_ids: null` (every pack).
    var packIDs: [Int64]??
    var description: String?
    var enabled: Bool?

    /// `creating`: `url` and `events` are required and `enabled` is not a field.
    init(_ request: HTTPRequest, creating: Bool, urlPolicy: WebhookURLPolicy) throws(Problem) {
        let decoder = StrictJSONDecoder()
        try decoder.checkContentType(request.headers["Content-Type"])
        let object = try JSONBody.object(request.body, maxDepth: decoder.maxDepth)
        var errors: [Problem.FieldError] = []
        let known: Set<String> = creating ? ["url", "events", "pack_ids", "description"]
                                          : ["url", "events", "pack_ids", "description", "enabled"]
        for key in object.keys.sorted() where !known.contains(key) {
            errors.append(.init(pointer: "/" + JSONBody.escape(key), detail: "unknown field"))
        }
        url = Self.string(object, "url", required: creating, errors: &errors)
        if let url {
            errors += urlPolicy.problems(url).map { .init(pointer: "/url", detail: $0) }
        }
        events = Self.events(object, required: creating, errors: &errors)
        packIDs = Self.packIDs(object, errors: &errors)
        description = Self.string(object, "description", required: false, errors: &errors)
        if let description, description.count > Self.maximumDescription {
            errors.append(.init(pointer: "/description", detail: "must be at most \(Self.maximumDescription) characters"))
        }
        if let value = object["enabled"], !creating {
            if Self.isBoolean(value), let number = value as? NSNumber { enabled = number.boolValue } else {
                errors.append(.init(pointer: "/enabled", detail: "expected a boolean"))
            }
        }
        guard errors.isEmpty else {
            let hostRefused = errors.contains { $0.pointer == "/url" && $0.detail.contains("may not reach") }
            throw Problem(hostRefused ? .hostNotAllowed : .validationFailed,
                          detail: creating ? "the webhook cannot be created as requested" : "the webhook cannot be changed as requested",
                          errors: errors)
        }
    }

    /// On Linux a JSON `1` bridges to `Bool`: the boxed number's type code tells (`c` is a boolean).
    private static func isBoolean(_ value: Any) -> Bool {
        guard !(value is String), let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func string(_ object: [String: Any], _ key: String, required: Bool, errors: inout [Problem.FieldError]) -> String? {
        guard let value = object[key] else {
            if required { errors.append(.init(pointer: "/\(key)", detail: "required field is missing")) }
            return nil
        }
        guard let text = value as? String else {
            errors.append(.init(pointer: "/\(key)", detail: value is NSNull ? "expected a string, not null" : "expected a string"))
            return nil
        }
        return text
    }

    private static func events(_ object: [String: Any], required: Bool, errors: inout [Problem.FieldError]) -> [String]? {
        guard let value = object["events"] else {
            if required { errors.append(.init(pointer: "/events", detail: "required field is missing")) }
            return nil
        }
        guard let list = value as? [Any], !list.isEmpty, list.count <= maximumEvents else {
            errors.append(.init(pointer: "/events", detail: "expected 1 to \(maximumEvents) event types, or [\"*\"]"))
            return nil
        }
        let subscribable = Set(WebhookEventType.allCases.filter { $0 != .webhookPing }.map(\.rawValue))
        var events: [String] = []
        for (index, item) in list.enumerated() {
            guard let name = item as? String, name == WebhookEventType.wildcard || subscribable.contains(name) else {
                errors.append(.init(pointer: "/events/\(index)", detail: "expected one of \(subscribable.sorted().joined(separator: ", ")) or *"))
                continue
            }
            guard !events.contains(name) else {
                errors.append(.init(pointer: "/events/\(index)", detail: "listed twice"))
                continue
            }
            events.append(name)
        }
        if events.contains(WebhookEventType.wildcard), events.count > 1 {
            errors.append(.init(pointer: "/events", detail: "\"*\" already takes every type: list it alone"))
        }
        return events
    }

    private static func packIDs(_ object: [String: Any], errors: inout [Problem.FieldError]) -> [Int64]?? {
        guard let value = object["pack_ids"] else { return nil }
        if value is NSNull { return .some(nil) }
        guard let list = value as? [Any], list.count <= maximumPackIDs else {
            errors.append(.init(pointer: "/pack_ids", detail: "expected an array of at most \(maximumPackIDs) pack ids, or null"))
            return nil
        }
        var ids: [Int64] = []
        for (index, item) in list.enumerated() {
            guard let number = item as? NSNumber, !isBoolean(item), let id = Int64(exactly: number.doubleValue),
                  Double(id) == number.doubleValue, (1...9_007_199_254_740_991).contains(id) else {
                errors.append(.init(pointer: "/pack_ids/\(index)", detail: "expected a pack id (a positive integer)"))
                continue
            }
            if !ids.contains(id) { ids.append(id) }
        }
        return .some(ids)
    }
}
