import CCurl

/// Why a transfer produced no HTTP response. `code` is the stable snake_case name used in API
/// problem details and stored error rows; it never includes the URL or any credential.
public enum FetchError: Error, Sendable, Equatable, CustomStringConvertible {
    case invalidURL
    case unsupportedScheme
    case invalidHeader
    case dnsFailed
    case connectFailed
    case connectionReset
    case timedOut
    case truncatedBody
    case tooLarge(limit: Int)
    case blockedAddress
    case tooManyRedirects(limit: Int)
    case tls
    case cancelled
    case shutdown
    /// A range was asked for and the server answered 200 with the whole file (stopped at its first bytes).
    case rangeIgnored
    /// A range was asked for and the server answered other bytes (another start, a longer range,
    /// a content-encoded body).
    case rangeMismatch
    /// Any other curl failure; `CURLcode` kept for the log.
    case transport(curlCode: Int32)

    public var code: String {
        switch self {
        case .invalidURL: "invalid_url"
        case .unsupportedScheme: "unsupported_scheme"
        case .invalidHeader: "invalid_header"
        case .dnsFailed: "dns_failed"
        case .connectFailed: "connect_failed"
        case .connectionReset: "connection_reset"
        case .timedOut: "timeout"
        case .truncatedBody: "truncated_body"
        case .tooLarge: "too_large"
        case .blockedAddress: "blocked_address"
        case .tooManyRedirects: "too_many_redirects"
        case .tls: "tls_failed"
        case .cancelled: "cancelled"
        case .shutdown: "shutdown"
        case .rangeIgnored: "range_not_supported"
        case .rangeMismatch: "range_mismatch"
        case .transport: "transport_error"
        }
    }

    /// Whether trying again later can help (the retry policy's first question).
    public var isTransient: Bool {
        switch self {
        case .dnsFailed, .connectFailed, .connectionReset, .timedOut, .truncatedBody, .transport: true
        default: false
        }
    }

    public var description: String {
        switch self {
        case let .tooLarge(limit): "\(code): body exceeds \(limit) bytes"
        case let .tooManyRedirects(limit): "\(code): more than \(limit) redirects"
        case let .transport(curlCode): "\(code): \(String(cString: curl_easy_strerror(CURLcode(UInt32(bitPattern: curlCode)))))"
        default: code
        }
    }

    /// Maps a finished easy handle's result. `blocked`/`exceeded` are what our own callbacks saw:
    /// curl only reports "couldn't connect" or "write error" for them.
    static func from(_ result: CURLcode, blocked: Bool, exceeded: Bool, bodyLimit: Int, range: FetchError? = nil) -> FetchError {
        // The answer to a range request was refused at its headers (a 200 declaring a length
        // above the limit) or its first bytes.
        if let range, result == CURLE_WRITE_ERROR || result == CURLE_FILESIZE_EXCEEDED { return range }
        return switch result {
        case CURLE_COULDNT_CONNECT where blocked: .blockedAddress
        case CURLE_COULDNT_CONNECT: .connectFailed
        case CURLE_COULDNT_RESOLVE_HOST: .dnsFailed
        case CURLE_OPERATION_TIMEDOUT: .timedOut
        case CURLE_PARTIAL_FILE: .truncatedBody
        case CURLE_FILESIZE_EXCEEDED: .tooLarge(limit: bodyLimit)
        case CURLE_WRITE_ERROR where exceeded: .tooLarge(limit: bodyLimit)
        case CURLE_RECV_ERROR, CURLE_SEND_ERROR, CURLE_GOT_NOTHING, CURLE_HTTP2, CURLE_HTTP2_STREAM: .connectionReset
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM: .tls
        case CURLE_UNSUPPORTED_PROTOCOL: .unsupportedScheme
        case CURLE_URL_MALFORMAT: .invalidURL
        default: .transport(curlCode: Int32(bitPattern: result.rawValue))
        }
    }
}
