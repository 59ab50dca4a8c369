import Cryptography
import Foundation
import Server

/// Checks API keys against the configured ones and answers 401/403 as openapi.yaml specifies.
///
/// Configuration format, in a file (`--api-keys-file`) or in `PACKD_API_KEYS`: entries of
/// `role:key`, one per line in a file (blank lines and lines starting with `#` are ignored), or
/// separated by commas or whitespace in the environment variable. The role is `read`, `write` or
/// `admin`; a key is 16 to 512 visible ASCII characters without `,` (so it survives headers and
/// query strings unescaped).
///
/// Only SHA-256 digests of the keys are kept, so a heap dump or a debugger shows no key, and a
/// presented token is hashed and compared with every digest in constant time, so response
/// timing tells nothing about how close a guess was or which key matched. Parse errors name the
/// line, never the key.
public struct APIKeyAuthenticator: Sendable {
    public struct ConfigurationError: Error, Equatable, CustomStringConvertible {
        public let description: String
    }

    /// Who made a request.
    public enum Identity: Equatable, Sendable {
        /// No keys are configured: the server only listens on loopback and trusts its callers.
        case unauthenticated
        case key(role: APIRole)
    }

    public static let minimumKeyLength = 16
    public static let maximumKeyLength = 512

    private let keys: [(digest: [UInt8], role: APIRole)]

    /// With no keys, every request is allowed (and `checkListenAddress` only allows loopback).
    public init() {
        keys = []
    }

    /// Parses `role:key` entries, one per line and also split at `extraSeparators`; `source`
    /// names where they came from in error messages.
    public init(parsing text: String, source: String, extraSeparators: Set<Character> = []) throws(ConfigurationError) {
        var keys: [(digest: [UInt8], role: APIRole)] = []
        var digests: Set<[UInt8]> = []
        let entries = text.split(omittingEmptySubsequences: false) { $0.isNewline || extraSeparators.contains($0) }
        for (number, rawEntry) in entries.enumerated() {
            let entry = rawEntry.trimmingCharacters(in: .whitespaces)
            if entry.isEmpty || entry.hasPrefix("#") { continue }
            let place = extraSeparators.isEmpty ? "\(source) line \(number + 1)" : "\(source) entry \(number + 1)"
            guard let colon = entry.firstIndex(of: ":") else {
                throw ConfigurationError(description: "\(place): expected role:key")
            }
            guard let role = APIRole(name: entry[..<colon]), role != .operator else {
                throw ConfigurationError(description: "\(place): role must be read, write or admin")
            }
            let key = entry[entry.index(after: colon)...].utf8
            guard (Self.minimumKeyLength...Self.maximumKeyLength).contains(key.count) else {
                throw ConfigurationError(description: "\(place): a key must be \(Self.minimumKeyLength) to \(Self.maximumKeyLength) characters")
            }
            guard key.allSatisfy({ $0 > 0x20 && $0 < 0x7F && $0 != UInt8(ascii: ",") }) else {
                throw ConfigurationError(description: "\(place): a key must be visible ASCII without ','")
            }
            let digest = SHA256.hash(key)
            guard digests.insert(digest).inserted else {
                throw ConfigurationError(description: "\(place): the same key is configured twice")
            }
            keys.append((digest, role))
        }
        self.keys = keys
    }

    /// Keys from `PACKD_API_KEYS` (separated by commas, whitespace or line breaks) and from a file.
    public static func load(environment: [String: String] = ProcessInfo.processInfo.environment, file: String?) throws(ConfigurationError) -> APIKeyAuthenticator {
        var combined = APIKeyAuthenticator()
        if let value = environment["PACKD_API_KEYS"] {
            combined = try APIKeyAuthenticator(parsing: value, source: "PACKD_API_KEYS", extraSeparators: [",", " ", "\t"])
        }
        if let file {
            guard let data = FileManager.default.contents(atPath: file), data.count <= 1 << 20,
                  let text = String(data: data, encoding: .utf8) else {
                throw ConfigurationError(description: "\(file): cannot read an API key file (UTF-8, at most 1 MiB)")
            }
            let fromFile = try APIKeyAuthenticator(parsing: text, source: file)
            combined = APIKeyAuthenticator(keys: combined.keys + fromFile.keys)
            guard !hasDuplicate(combined.keys) else {
                throw ConfigurationError(description: "\(file): a key is also in PACKD_API_KEYS")
            }
        }
        return combined
    }

    private init(keys: [(digest: [UInt8], role: APIRole)]) {
        self.keys = keys
    }

    private static func hasDuplicate(_ keys: [(digest: [UInt8], role: APIRole)]) -> Bool {
        Set(keys.map(\.digest)).count != keys.count
    }

    public var isEnabled: Bool { !keys.isEmpty }
    public var keyCount: Int { keys.count }

    /// The role of `token`, or `nil` when it is no configured key.
    public func role(of token: Substring) -> APIRole? {
        guard token.utf8.count <= Self.maximumKeyLength else { return nil }
        let digest = SHA256.hash(token.utf8)
        var match: APIRole?
        // Every digest is compared, whichever matches, so timing does not reveal the index.
        for key in keys where ConstantTime.equals(key.digest, digest) {
            match = key.role
        }
        return match
    }

    /// Decides a request needing `required` (nil: public). `allowsQueryToken` is true only for the
    /// events endpoints, whose browser clients (`EventSource`) cannot send `Authorization`.
    public func authenticate(_ request: HTTPRequest, requires required: APIRole?, allowsQueryToken: Bool = false) -> Result<Identity, Problem> {
        guard isEnabled else { return .success(.unauthenticated) }
        guard let required else { return .success(.unauthenticated) }
        let token: Substring
        if let header = request.headers["Authorization"] {
            guard let bearer = Self.bearerToken(header) else {
                return .failure(Problem(.unauthorized, detail: "the Authorization header must be 'Bearer <key>'"))
            }
            token = bearer
        } else if allowsQueryToken, let query = request.queryValue("access_token"), !query.isEmpty {
            token = Substring(query)
        } else {
            return .failure(Problem(.unauthorized, detail: "an API key is required"))
        }
        guard let role = role(of: token) else {
            return .failure(Problem(.unauthorized, detail: "the API key is not valid"))
        }
        guard role >= required else {
            return .failure(Problem(.forbidden, detail: "this operation needs the \(required) role"))
        }
        return .success(.key(role: role))
    }

    /// Wraps `handler` so it runs only for requests allowed by `required`.
    public func guarding(_ required: APIRole?, allowsQueryToken: Bool = false, _ handler: @escaping APIHandler) -> APIHandler {
        { request, responder in
            switch authenticate(request, requires: required, allowsQueryToken: allowsQueryToken) {
            case .success:
                handler(request, responder)
            case .failure(let problem):
                responder.respond(Self.response(for: problem))
            }
        }
    }

    /// The answer to a failed check; a 401 carries the `WWW-Authenticate` challenge (RFC 6750).
    public static func response(for problem: Problem) -> HTTPResponse {
        var headers = HTTPHeaders()
        if problem.status == 401 {
            headers.set("WWW-Authenticate", #"Bearer realm="packd""#)
        }
        return .problem(problem, headers: headers)
    }

    /// The token of `Bearer <token>` (scheme case-insensitive, RFC 9110 §11.1), or nil.
    static func bearerToken(_ header: String) -> Substring? {
        let trimmed = header.drop { $0 == " " }
        guard trimmed.count > 7, trimmed.prefix(6).lowercased() == "bearer", trimmed.dropFirst(6).first == " " else { return nil }
        let token = trimmed.dropFirst(7).drop { $0 == " " }
        let end = token.lastIndex { $0 != " " }.map { token.index(after: $0) } ?? token.startIndex
        let result = token[..<end]
        guard !result.isEmpty, !result.contains(" ") else { return nil }
        return result
    }
}
