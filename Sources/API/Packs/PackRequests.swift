import Foundation
import Jobs
import Packs
import Plan
import Server

/// The largest `context` accepted, decoded (openapi.yaml's `Context`).
let maximumContextBytes = 64 * 1024

extension PackLimits {
    /// What is wrong with posted limits, with pointers.
    var problems: [Problem.FieldError] {
        var errors: [Problem.FieldError] = []
        if let maxTiles, maxTiles < 1 { errors.append(.init(pointer: "/limits/max_tiles", detail: "must be at least 1")) }
        if let maxBytesPerSecond, maxBytesPerSecond < 1 {
            errors.append(.init(pointer: "/limits/max_bytes_per_second", detail: "must be at least 1"))
        }
        return errors
    }
}

extension StartArea {
    /// What is wrong with a posted start area, with pointers.
    var problems: [Problem.FieldError] {
        var errors: [Problem.FieldError] = []
        if center.count != 2 {
            errors.append(.init(pointer: "/start_area/center", detail: "must be [longitude, latitude]"))
        } else {
            if !(center[0].isFinite && abs(center[0]) <= 180) {
                errors.append(.init(pointer: "/start_area/center/0", detail: "longitude must be from -180 to 180"))
            }
            if !(center[1].isFinite && abs(center[1]) <= 85.051128779806604) {
                errors.append(.init(pointer: "/start_area/center/1", detail: "latitude must be from -85.0511 to 85.0511 (Web Mercator)"))
            }
        }
        if !(radiusM.isFinite && radiusM >= 1 && radiusM <= Self.maximumRadius) {
            errors.append(.init(pointer: "/start_area/radius_m", detail: "must be from 1 to \(Int(Self.maximumRadius)) metres"))
        }
        return errors
    }
}

/// The body of `POST /v1/packs`, validated: every problem is collected so a client fixes its
/// request in one round trip.
struct PackCreateRequest {
    let region: RegionDefinition
    let context: [UInt8]?
    let name: String?
    let start: Bool
    let limits: PackLimits
    let refresh: RefreshSchedule?
    let startArea: StartArea?

    init(body: [UInt8], contentType: String?) throws(Problem) {
        let decoder = StrictJSONDecoder()
        try decoder.checkContentType(contentType)
        let object = try JSONBody.object(body, maxDepth: decoder.maxDepth)
        var errors: [Problem.FieldError] = []
        var rest = object
        rest.removeValue(forKey: "region")
        // Everything but `region`, decoded strictly (types, unknown fields) from the same objects.
        var fields = PackCreation.Settings()
        do {
            fields = try decoder.decode(PackCreation.Settings.self, fromObject: rest)
        } catch {
            errors += error.errors ?? [.init(pointer: "", detail: error.detail)]
        }
        let region = Self.region(in: object, errors: &errors)
        var context: [UInt8]?
        if let text = fields.context {
            context = Self.decodeContext(text, pointer: "/context", into: &errors)
        }
        if let name = fields.name { errors += Self.nameProblems(name, pointer: "/name") }
        errors += fields.limits?.problems ?? []
        let refresh = fields.refresh.flatMap { Self.refreshSchedule($0.every, into: &errors) }
        errors += fields.startArea?.problems ?? []
        guard errors.isEmpty, let region else {
            throw Problem(.validationFailed, detail: "the pack cannot be created as requested", errors: errors)
        }
        self.region = region
        self.context = context
        name = fields.name
        start = fields.start ?? true
        limits = fields.limits ?? PackLimits()
        self.refresh = refresh
        startArea = fields.startArea
    }

    /// `refresh.every` parsed, or a problem at `/refresh/every`.
    static func refreshSchedule(_ every: String, into errors: inout [Problem.FieldError]) -> RefreshSchedule? {
        do {
            return try RefreshSchedule(every: every)
        } catch {
            errors.append(.init(pointer: "/refresh/every", detail: error.description))
            return nil
        }
    }

    /// The body's required `region`, validated; every problem goes to `errors` with its pointer.
    /// `POST /v1/estimates` validates regions the same way.
    static func region(in object: [String: Any], errors: inout [Problem.FieldError]) -> RegionDefinition? {
        guard let regionJSON = object["region"], !(regionJSON is NSNull) else {
            errors.append(.init(pointer: "/region", detail: "required field is missing"))
            return nil
        }
        do {
            return try RegionDefinition(json: regionJSON)
        } catch {
            errors += error.problems.map { .init(pointer: "/region" + $0.pointer, detail: $0.detail) }
            return nil
        }
    }

    /// Base64 (RFC 4648 with padding) of at most `maximumContextBytes`, or a problem at `pointer`.
    static func decodeContext(_ text: String, pointer: String, into errors: inout [Problem.FieldError]) -> [UInt8]? {
        // 4 base64 characters per 3 bytes: anything longer cannot decode within the limit.
        guard text.utf8.count <= (maximumContextBytes + 2) / 3 * 4 else {
            errors.append(.init(pointer: pointer, detail: "must decode to at most \(maximumContextBytes) bytes"))
            return nil
        }
        guard let data = Data(base64Encoded: text), data.count <= maximumContextBytes else {
            errors.append(.init(pointer: pointer, detail: "must be base64 (RFC 4648, with padding)"))
            return nil
        }
        return Array(data)
    }

    static func nameProblems(_ name: String, pointer: String) -> [Problem.FieldError] {
        (1...256).contains(name.count) ? [] : [.init(pointer: pointer, detail: "must be 1 to 256 characters")]
    }
}

/// The body of `PATCH /v1/packs/{id}`: `context`, `name` and/or `refresh`, where `null` clears
/// the field. `nil` means absent, `.some(nil)` means clear.
struct PackUpdateRequest {
    let context: [UInt8]??
    let name: String??
    let refresh: RefreshSchedule??

    init(body: [UInt8], contentType: String?) throws(Problem) {
        let decoder = StrictJSONDecoder()
        try decoder.checkContentType(contentType)
        let object = try JSONBody.object(body, maxDepth: decoder.maxDepth)
        var errors: [Problem.FieldError] = []
        for key in object.keys.sorted() where !["context", "name", "refresh"].contains(key) {
            errors.append(.init(pointer: "/" + JSONBody.escape(key), detail: "unknown field"))
        }
        if object.isEmpty { errors.append(.init(pointer: "", detail: "at least one of context, name or refresh is required")) }
        var context: [UInt8]??
        switch object["context"] {
        case nil: context = nil
        case is NSNull: context = .some(nil)
        case let text as String: context = .some(PackCreateRequest.decodeContext(text, pointer: "/context", into: &errors))
        default: errors.append(.init(pointer: "/context", detail: "expected a string or null"))
        }
        var name: String??
        switch object["name"] {
        case nil: name = nil
        case is NSNull: name = .some(nil)
        case let text as String:
            errors += PackCreateRequest.nameProblems(text, pointer: "/name")
            name = .some(text)
        default: errors.append(.init(pointer: "/name", detail: "expected a string or null"))
        }
        var refresh: RefreshSchedule??
        switch object["refresh"] {
        case nil: refresh = nil
        case is NSNull: refresh = .some(nil)
        case let fields as [String: Any]:
            for key in fields.keys.sorted() where key != "every" {
                errors.append(.init(pointer: "/refresh/" + JSONBody.escape(key), detail: "unknown field"))
            }
            if let every = fields["every"] as? String {
                refresh = .some(PackCreateRequest.refreshSchedule(every, into: &errors))
            } else {
                errors.append(.init(pointer: "/refresh/every", detail: "required: an ISO 8601 duration such as P7D"))
            }
        default: errors.append(.init(pointer: "/refresh", detail: "expected an object or null"))
        }
        guard errors.isEmpty else {
            throw Problem(.validationFailed, detail: "the pack cannot be changed as requested", errors: errors)
        }
        self.context = context
        self.name = name
        self.refresh = refresh
    }
}

/// Parsing a JSON object body before a schema applies.
enum JSONBody {
    /// The body as a JSON object: 400 when it is not JSON, 422 when it is JSON but no object.
    static func object(_ body: [UInt8], maxDepth: Int) throws(Problem) -> [String: Any] {
        guard !body.isEmpty else { throw Problem(.malformedRequest, detail: "the request needs a JSON body") }
        guard StrictJSONDecoder.nestingDepth(body, limit: maxDepth) <= maxDepth else {
            throw Problem(.malformedRequest, detail: "the JSON body is nested deeper than \(maxDepth) levels")
        }
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(body), options: [.fragmentsAllowed])
        } catch {
            throw Problem(.malformedRequest, detail: "the body is not valid JSON")
        }
        guard let object = value as? [String: Any] else {
            throw Problem(.validationFailed, detail: "the body must be a JSON object",
                          errors: [.init(pointer: "", detail: "expected an object")])
        }
        return object
    }

    /// A key as one JSON Pointer segment (RFC 6901).
    static func escape(_ key: String) -> String {
        key.replacingOccurrences(of: "~", with: "~0").replacingOccurrences(of: "/", with: "~1")
    }

    /// Sorted-key JSON bytes of a `JSONSerialization` value: stable bodies and ETags.
    static func encode(_ value: Any) -> [UInt8] {
        SortedJSONWriter.encode(value)
    }

    /// Sorted-key JSON bytes of a wire value (`Pack`, events, …). packd's wire types encode
    /// without throwing; should one ever throw, `null` goes out rather than a crash.
    static func encode(_ value: some Encodable) -> [UInt8] {
        (try? SortedJSONEncoder.encode(value)) ?? Array("null".utf8)
    }
}
