import Foundation

/// The `--upstream-ca-file`: CA certificates (PEM) trusted for upstream HTTPS in addition to the
/// system's, for tile servers behind a private CA. Checked once at start-up — readable, bounded,
/// and made of PEM certificate blocks whose contents are DER — so a wrong path or a key file
/// given by mistake stops the server with a clear message instead of failing every download
/// with `tls_failed` later.
enum UpstreamCAFile {
    static let maximumBytes = 4 << 20
    static let maximumCertificates = 1000

    struct Invalid: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    /// The absolute path of a usable file (curl reads it, relative to no working directory).
    static func check(path: String) throws(Invalid) -> String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        guard let handle = FileHandle(forReadingAtPath: absolute) else { throw Invalid("cannot open \(path)") }
        defer { try? handle.close() }
        let data: Data
        do {
            data = try handle.read(upToCount: maximumBytes + 1) ?? Data()
        } catch {
            throw Invalid("cannot read \(path): \(error.localizedDescription)")
        }
        guard data.count <= maximumBytes else { throw Invalid("\(path) is larger than \(maximumBytes) bytes") }
        let count = try certificateCount(String(decoding: data, as: UTF8.self), path: path)
        guard count > 0 else {
            throw Invalid("\(path) holds no PEM certificate (-----BEGIN CERTIFICATE----- … -----END CERTIFICATE-----)")
        }
        return absolute
    }

    /// The certificate blocks in `text`, each checked to be base64 of a DER SEQUENCE.
    static func certificateCount(_ text: String, path: String) throws(Invalid) -> Int {
        let begin = "-----BEGIN CERTIFICATE-----"
        let end = "-----END CERTIFICATE-----"
        var count = 0
        var rest = Substring(text)
        while let start = rest.range(of: begin) {
            count += 1
            guard count <= maximumCertificates else { throw Invalid("\(path) holds more than \(maximumCertificates) certificates") }
            guard let stop = rest[start.upperBound...].range(of: end) else {
                throw Invalid("\(path): certificate \(count) has no \(end) line")
            }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Data(base64Encoded: String(body)), der.count > 16, der.first == 0x30 else {
                throw Invalid("\(path): certificate \(count) is not a base64-encoded DER certificate")
            }
            rest = rest[stop.upperBound...]
        }
        return count
    }
}
