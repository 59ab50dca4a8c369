import Packs
import Server

/// The query of `GET /v1/packs`, validated (400 for a bad value), and the link to the next page.
struct PackListQuery: Sendable {
    var state: PackState?
    var nameContains: String?
    var limit = 100
    var after: Int64 = 0

    init(_ request: HTTPRequest) throws(Problem) {
        if let state = request.queryValue("state") {
            guard let known = PackState(rawValue: state) else {
                throw Self.problem("state", "must be one of \(PackState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            self.state = known
        }
        if let text = request.queryValue("q") {
            guard (1...256).contains(text.count) else { throw Self.problem("q", "must be 1 to 256 characters") }
            nameContains = text
        }
        if let text = request.queryValue("limit") {
            guard let value = Int(text), (1...PackRoutes.pageLimit).contains(value) else {
                throw Self.problem("limit", "must be an integer from 1 to \(PackRoutes.pageLimit)")
            }
            limit = value
        }
        if let text = request.queryValue("after") {
            guard let value = Int64(text), (0...9_007_199_254_740_991).contains(value) else {
                throw Self.problem("after", "must be a pack id (0 or more)")
            }
            after = value
        }
    }

    /// The path and query of the page after `lastID`, with the same filters.
    func nextPath(after lastID: Int64) -> String {
        var path = "/v1/packs?after=\(lastID)&limit=\(limit)"
        if let state { path += "&state=\(state.rawValue)" }
        if let nameContains { path += "&q=" + Self.encode(nameContains) }
        return path
    }

    private static func encode(_ text: String) -> String {
        var result = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                result.unicodeScalars.append(UnicodeScalar(byte))
            default:
                result += "%" + String(byte, radix: 16, uppercase: true).leftPadded
            }
        }
        return result
    }

    private static func problem(_ parameter: String, _ detail: String) -> Problem {
        Problem(.malformedRequest, detail: "query parameter \(parameter) \(detail)")
    }
}

extension String {
    fileprivate var leftPadded: String { count < 2 ? "0" + self : self }
}
