import CCurl

extension FetchRequest {
    /// A `POST` (a webhook delivery): its body, and how its answer is taken. A post never follows
    /// a redirect — a 3xx is its answer — and may keep only the first `maxBodyBytes` of a longer
    /// answer body instead of failing.
    public struct Post: Sendable {
        public var body: [UInt8]
        /// A longer answer keeps its first `maxBodyBytes` (and its status) instead of failing
        /// with `tooLarge`; the rest is not read.
        public var keepsBodyPrefix: Bool

        public init(body: [UInt8], keepsBodyPrefix: Bool = true) {
            self.body = body
            self.keepsBodyPrefix = keepsBodyPrefix
        }
    }

    /// A `POST` of `body` to `url` with `headers`, answered within `timeout` (connecting
    /// included), reading at most `maxBodyBytes` of the answer.
    public static func post(_ url: String, body: [UInt8], headers: [(name: String, value: String)],
                            timeout: Duration, maxBodyBytes: Int, owner: UInt64) -> FetchRequest {
        let milliseconds = Int(timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
        var request = FetchRequest(url: url, method: .post, headers: headers, maxBodyBytes: maxBodyBytes,
                                   timeouts: Timeouts(connectMilliseconds: milliseconds, lowSpeedBytesPerSecond: 1,
                                                      lowSpeedSeconds: max(1, milliseconds / 1000), totalMilliseconds: milliseconds),
                                   owner: owner)
        request.post = Post(body: body)
        return request
    }
}

extension Transfer {
    /// The method's options, each set for every request (handles are reused without a reset):
    /// a post's body copied into curl, no size cap that would refuse a long answer it only
    /// reads the start of; otherwise a GET or HEAD with the body capped.
    func configureMethod(_ easy: UnsafeMutableRawPointer) -> Bool {
        if let post = request.post {
            var ok = packd_easy_setopt_long(easy, CURLOPT_NOBODY, 0) == CURLE_OK
            ok = ok && packd_easy_setopt_off(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(post.body.count)) == CURLE_OK
            ok = ok && post.body.withUnsafeBufferPointer { bytes in
                // COPYPOSTFIELDS copies (and implies POST); an empty body still needs a pointer.
                packd_easy_setopt_pointer(easy, CURLOPT_COPYPOSTFIELDS,
                                          UnsafeMutableRawPointer(mutating: bytes.baseAddress ?? UnsafePointer([0]))) == CURLE_OK
            }
            let cap = post.keepsBodyPrefix ? 0 : request.maxBodyBytes
            return ok && packd_easy_setopt_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(cap)) == CURLE_OK
        }
        var ok = packd_easy_setopt_long(easy, CURLOPT_HTTPGET, 1) == CURLE_OK
        ok = ok && packd_easy_setopt_long(easy, CURLOPT_NOBODY, request.method == .head ? 1 : 0) == CURLE_OK
        return ok && packd_easy_setopt_off(easy, CURLOPT_MAXFILESIZE_LARGE, curl_off_t(request.maxBodyBytes)) == CURLE_OK
    }

}
