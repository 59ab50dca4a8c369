import CCurl
import Glibc
import Packs
import TimeFormats

/// One request in flight or waiting: the canonical request, its wire form, and what curl has
/// delivered so far. Lives on the loop thread; curl's callbacks reach it through the easy
/// handle's private/userdata pointers, unretained — the fetcher's tables keep it alive.
final class Transfer {
    let id: UInt64
    let request: FetchRequest
    let completion: (Result<FetchResponse, FetchError>) -> Void
    /// The canonical URL of the current hop (changes when a redirect is followed).
    var canonicalURL: String
    var hostKey: String
    var wireHost: String
    var redirects = 0
    /// The host limiter's ticket when this hop started (`HostConcurrencyLimiter.finished`).
    var limiterTicket: HostConcurrencyLimiter.Ticket?

    var easy: UnsafeMutableRawPointer?
    var headerList: UnsafeMutablePointer<curl_slist>?
    let policy: AddressPolicy

    private(set) var body: [UInt8] = []
    private(set) var headers = ResponseHeaders()
    private(set) var refusedAddress = false
    private(set) var exceededLimit = false
    /// The status line's code of the answer under way (0 before it arrives).
    private(set) var status = 0
    /// Why the answer to a range request was cut off at its first bytes.
    private(set) var rangeFailure: FetchError?
    /// A post's answer was longer than its limit and only its start was read.
    private(set) var keptBodyPrefix = false
    private var headerBytes = 0
    static let maxHeaderBytes = 64 << 10

    /// `target` is nil for a request rejected before it was ever queued.
    init(id: UInt64, request: FetchRequest, target: WireTarget?, policy: AddressPolicy,
         completion: @escaping (Result<FetchResponse, FetchError>) -> Void) {
        self.id = id
        self.request = request
        self.completion = completion
        self.canonicalURL = request.url
        self.hostKey = target?.hostKey ?? ""
        self.wireHost = target?.host ?? ""
        self.policy = policy
    }

    /// Points the transfer at a redirect hop's host.
    func retarget(_ target: WireTarget) {
        hostKey = target.hostKey
        wireHost = target.host
    }

    /// Clears what a previous hop received.
    func resetForHop() {
        body = []
        headers.removeAll()
        refusedAddress = false
        exceededLimit = false
        status = 0
        rangeFailure = nil
        keptBodyPrefix = false
        headerBytes = 0
    }

    /// Sets what is the same for every request on a new easy handle. The fetcher reuses handles
    /// without `curl_easy_reset`, so these stay and `configure` sets only the rest, every option
    /// it sets for one request being set again for the next.
    static func prepare(_ easy: UnsafeMutableRawPointer, caFile: String?) -> Bool {
        var ok = packd_easy_setopt_string(easy, CURLOPT_PROTOCOLS_STR, "http,https") == CURLE_OK
        ok = ok && packd_easy_setopt_string(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https") == CURLE_OK
        // An inherited http_proxy would make the address check judge the proxy, not the upstream.
        ok = ok && packd_easy_setopt_string(easy, CURLOPT_PROXY, "") == CURLE_OK
        ok = ok && packd_easy_setopt_string(easy, CURLOPT_USERAGENT, "packd/1") == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_NOSIGNAL, 1) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_FOLLOWLOCATION, 0) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_HTTP_CONTENT_DECODING, 0) == CURLE_OK
        // Added to, not instead of, the system's CAs: curl keeps its CA directory (CURLOPT_CAPATH,
        // /etc/ssl/certs on Debian) beside this file.
        if let caFile { ok = ok && packd_easy_setopt_string(easy, CURLOPT_CAINFO, caFile) == CURLE_OK }
        ok = ok && packd_easy_setopt_write_callback(easy) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                .received(UnsafeRawBufferPointer(start: data, count: size * count))
        } == CURLE_OK
        ok = ok && packd_easy_setopt_header_callback(easy) { data, size, count, userdata in
            guard let data, let userdata else { return 0 }
            return Unmanaged<Transfer>.fromOpaque(userdata).takeUnretainedValue()
                .receivedHeader(UnsafeRawBufferPointer(start: data, count: size * count))
        } == CURLE_OK
        ok = ok && packd_easy_setopt_opensocket_callback(easy) { clientp, purpose, address in
            guard let clientp, let address else { return CURL_SOCKET_BAD }
            return Unmanaged<Transfer>.fromOpaque(clientp).takeUnretainedValue().openSocket(purpose, address)
        } == CURLE_OK
        return ok
    }

    /// Points `easy` (set up by `prepare`) at this transfer's current hop. `wire` is the URL with
    /// rule credentials.
    /// `http2PriorKnowledge`: speak HTTP/2 on a plain `http://` URL without negotiating (the host's
    /// rule asked for it); otherwise HTTP/2 where TLS can negotiate it (ALPN), HTTP/1.1 elsewhere.
    func configure(_ easy: UnsafeMutableRawPointer, wire: UpstreamRules.WireRequest, http2PriorKnowledge: Bool) -> Bool {
        self.easy = easy
        let me = Unmanaged.passUnretained(self).toOpaque()
        let timeouts = request.timeouts
        let https = Self.isHTTPS(wire.url)
        let version = http2PriorKnowledge && !https ? CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE : CURL_HTTP_VERSION_2TLS
        var ok = packd_easy_setopt_string(easy, CURLOPT_URL, wire.url) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_HTTP_VERSION, version) == CURLE_OK
        // Waiting for a connection that may multiplex (rather than each transfer opening its own)
        // pays off where HTTP/2 can be spoken: over TLS, or told. On plain HTTP/1.1 it would
        // serialise transfers behind a slow first one.
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_PIPEWAIT, https || http2PriorKnowledge ? 1 : 0) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_CONNECTTIMEOUT_MS, max(1, timeouts.connectMilliseconds)) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_TIMEOUT_MS, max(1, timeouts.totalMilliseconds)) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_LOW_SPEED_LIMIT, max(1, timeouts.lowSpeedBytesPerSecond)) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_LOW_SPEED_TIME, max(1, timeouts.lowSpeedSeconds)) == CURLE_OK
        ok = ok && configureMethod(easy)
        ok = ok && packd_easy_setopt_pointer(easy, CURLOPT_PRIVATE, me) == CURLE_OK
        ok = ok && packd_easy_setopt_pointer(easy, CURLOPT_WRITEDATA, me) == CURLE_OK
        ok = ok && packd_easy_setopt_pointer(easy, CURLOPT_HEADERDATA, me) == CURLE_OK
        ok = ok && packd_easy_setopt_pointer(easy, CURLOPT_OPENSOCKETDATA, me) == CURLE_OK
        guard ok, let list = requestHeaders(ruleHeaders: wire.headers) else { return false }
        headerList = list
        return packd_easy_setopt_slist(easy, CURLOPT_HTTPHEADER, list) == CURLE_OK
    }

    private static let httpsScheme = Array("https:".utf8)

    private static func isHTTPS(_ url: String) -> Bool {
        url.utf8.prefix(httpsScheme.count).equalsIgnoringASCIICase(httpsScheme)
    }

    /// Frees what `configure` allocated; the easy handle goes back to the pool.
    func detach() {
        if let headerList { curl_slist_free_all(headerList) }
        headerList = nil
        easy = nil
    }

    private func requestHeaders(ruleHeaders: [UpstreamRule.Field]) -> UnsafeMutablePointer<curl_slist>? {
        var list: UnsafeMutablePointer<curl_slist>?
        func append(_ line: String) -> Bool {
            guard let appended = curl_slist_append(list, line) else { return false }
            list = appended
            return true
        }
        // Sent by hand, without CURLOPT_ACCEPT_ENCODING, so curl passes the gzip body through
        // untouched and the store can keep it compressed.
        var ok = append(request.post != nil ? "Expect:"
                        : request.range == nil ? "Accept-Encoding: gzip" : "Accept-Encoding: identity")
        for line in request.range?.headerLines ?? [] where ok { ok = append(line) }
        if ok, let etag = request.ifNoneMatch { ok = append("If-None-Match: \(etag)") }
        if ok, let since = request.ifModifiedSince { ok = append("If-Modified-Since: \(HTTPDate.format(since))") }
        for field in request.headers where ok { ok = append("\(field.name): \(field.value)") }
        for field in ruleHeaders where ok { ok = append("\(field.name): \(field.value)") }
        guard ok else {
            if let list { curl_slist_free_all(list) }
            return nil
        }
        return list
    }

    private func received(_ bytes: UnsafeRawBufferPointer) -> Int {
        if body.isEmpty, let problem = rangeProblem(status: status) {
            rangeFailure = problem
            return 0
        }
        guard body.count <= request.maxBodyBytes - bytes.count else {
            exceededLimit = true
            if request.post?.keepsBodyPrefix == true {
                // A post's answer past its limit: its start is kept, the rest is not read.
                body.append(contentsOf: bytes.prefix(request.maxBodyBytes - body.count))
                keptBodyPrefix = true
            }
            return 0
        }
        body.append(contentsOf: bytes)
        return bytes.count
    }

    private func receivedHeader(_ line: UnsafeRawBufferPointer) -> Int {
        headerBytes += line.count
        guard headerBytes <= Self.maxHeaderBytes else {
            exceededLimit = true
            return 0
        }
        if line.starts(with: "HTTP/".utf8) {
            // A new response (after 100 Continue, say): forget the previous one's headers.
            headers.removeAll()
            status = Self.statusCode(line) ?? 0
            return line.count
        }
        headers.parse(line: line)
        if body.isEmpty, let length = Self.contentLength(line), length > 0 {
            body.reserveCapacity(min(length, request.maxBodyBytes))
        }
        return line.count
    }

    private static let contentLengthName = Array("content-length".utf8)

    /// The declared length, to size the buffer once; curl itself rejects one above the limit.
    static func contentLength(_ line: UnsafeRawBufferPointer) -> Int? {
        guard line.count < 64, let colon = line.firstIndex(of: UInt8(ascii: ":")),
              line[..<colon].equalsIgnoringASCIICase(contentLengthName) else { return nil }
        let digits = ResponseHeaders.trimmed(line[(colon + 1)...])
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 0x30) }
    }

    /// CURLOPT_OPENSOCKETFUNCTION: the one place that sees the resolved address before any packet
    /// leaves, for the first hop, every redirect hop and every reconnect alike.
    private func openSocket(_ purpose: curlsocktype, _ address: UnsafeMutablePointer<curl_sockaddr>) -> curl_socket_t {
        guard purpose == CURLSOCKTYPE_IPCXN,
              let offset = MemoryLayout<curl_sockaddr>.offset(of: \curl_sockaddr.addr) else { return CURL_SOCKET_BAD }
        let sockaddrPointer = (UnsafeMutableRawPointer(address) + offset).assumingMemoryBound(to: sockaddr.self)
        guard let ip = IPAddress(sockaddr: sockaddrPointer, length: Int(address.pointee.addrlen)),
              policy.permits(ip, host: wireHost) else {
            refusedAddress = true
            return CURL_SOCKET_BAD
        }
        return socket(address.pointee.family, address.pointee.socktype | Int32(SOCK_CLOEXEC.rawValue), address.pointee.protocol)
    }
}
