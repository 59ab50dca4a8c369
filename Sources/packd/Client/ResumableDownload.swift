import Artifacts
import Foundation

/// A download into a file that survives a cut connection: the body goes to `FILE.part`, the
/// server's strong `ETag` to `FILE.part.etag`; a transfer cut short is resumed with `Range` and
/// `If-Range` (in this run, up to `attempts` times, or in the next run of the same command), and
/// the finished file is checked against the SHA-256 the `ETag` carries (packd's artifacts) before
/// it is renamed to `FILE`. An answer without a strong tag (a scratch export) is downloaded as
/// before: whole, not resumable, unchecked.
struct ResumableDownload {
    struct Outcome {
        let bytes: Int64
        /// The checked SHA-256 (hex), when the server named one.
        let sha256: String?
        /// Where the last attempt started, when it resumed a partial file.
        let resumedAt: Int64?
    }

    let client: ServerClient
    let path: String
    let output: String
    var attempts = 5

    var partPath: String { output + ".part" }
    var tagPath: String { output + ".part.etag" }

    func run() throws(ClientFailure) -> Outcome {
        var resumedAt: Int64?
        for attempt in 1...max(1, attempts) {
            let existing = resumable()
            let sink: PartFileSink
            do {
                sink = try PartFileSink(part: partPath, tagPath: tagPath, existing: existing?.bytes ?? 0)
            } catch {
                throw .invalidInput("cannot write \(partPath): \(error)")
            }
            let headers = existing.map { ["Range: bytes=\($0.bytes)-", "If-Range: \($0.tag)"] } ?? []
            do {
                try client.perform(path, headers: headers, sink: sink, timeout: nil) { _ in }
                try sink.close()
            } catch let failure {
                try? sink.close()
                if case .unreachable = failure, attempt < attempts, sink.tag != nil { continue }
                if sink.tag == nil { discard() }
                throw failure
            }
            if sink.status == 206 { resumedAt = existing?.bytes }
            guard (200..<300).contains(sink.status) || sink.alreadyComplete else {
                discard()
                throw ClientFailure.refusal(status: sink.status, body: sink.refusal.data)
            }
            return try finish(tag: sink.tag ?? existing?.tag, resumedAt: resumedAt)
        }
        throw .unreachable("the download of \(path) did not finish in \(attempts) attempts; run the command again to resume")
    }

    /// The partial file and its tag left by an earlier attempt, when both are there.
    private func resumable() -> (bytes: Int64, tag: String)? {
        guard let tag = (try? String(contentsOfFile: tagPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines),
              Self.strongTag(tag) != nil else { return nil }
        var info = stat()
        guard stat(partPath, &info) == 0, info.st_size > 0 else { return nil }
        return (Int64(info.st_size), tag)
    }

    private func finish(tag: String?, resumedAt: Int64?) throws(ClientFailure) -> Outcome {
        let descriptor = open(partPath, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .invalidInput("cannot read \(partPath): \(String(cString: strerror(errno)))") }
        let hashed: (digest: [UInt8], size: Int)
        do {
            hashed = try Digest.sha256(ofFile: descriptor)
        } catch {
            close(descriptor)
            throw .invalidInput("cannot read \(partPath): \(error)")
        }
        close(descriptor)
        let hex = Digest.hex(hashed.digest)
        var checked: String?
        if let tag, let expected = Self.strongTag(tag) {
            guard expected == hex else {
                discard()
                throw .unexpected("the downloaded file's SHA-256 is \(hex), not \(expected) as the server's ETag says; it was removed, run the command again")
            }
            checked = hex
        }
        guard rename(partPath, output) == 0 else { throw .invalidInput("cannot write \(output): \(String(cString: strerror(errno)))") }
        unlink(tagPath)
        return Outcome(bytes: Int64(hashed.size), sha256: checked, resumedAt: resumedAt)
    }

    private func discard() {
        unlink(partPath)
        unlink(tagPath)
    }

    /// The hex digest of packd's strong artifact tag (`"<64 hex>"`), nil for any other tag.
    static func strongTag(_ tag: String) -> String? {
        guard tag.hasPrefix("\""), tag.hasSuffix("\""), tag.utf8.count == 66 else { return nil }
        let hex = String(tag.dropFirst().dropLast())
        return hex.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) ? hex : nil
    }
}

/// A 2xx body into the partial file — appended after a `206` that continues it, from the start
/// after a `200` — with the response's strong `ETag` written beside it; any other body (a
/// problem) kept in memory. A `416` whose `Content-Range` names exactly the bytes already held
/// means the partial file was complete.
private final class PartFileSink: ResponseSink {
    let part: String
    let tagPath: String
    let existing: Int64
    private var file: UnsafeMutablePointer<FILE>?
    private(set) var status = 0
    private(set) var tag: String?
    private(set) var alreadyComplete = false
    private(set) var writeFailed = false
    let refusal = BufferedSink(limit: 1 << 20)

    init(part: String, tagPath: String, existing: Int64) throws {
        self.part = part
        self.tagPath = tagPath
        self.existing = existing
    }

    func begin(status: Int, headers: [String: String]) {
        self.status = status
        refusal.begin(status: status, headers: headers)
        if status == 416, existing > 0, headers["content-range"] == "bytes */\(existing)" {
            alreadyComplete = true
            tag = (try? String(contentsOfFile: tagPath, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines)
            return
        }
        guard (200..<300).contains(status) else { return }
        let continues = status == 206 && headers["content-range"]?.hasPrefix("bytes \(existing)-") == true
        if status == 206, !continues {
            writeFailed = true
            return
        }
        file = fopen(part, continues ? "ab" : "wb")
        if let etag = headers["etag"], ResumableDownload.strongTag(etag) != nil {
            tag = etag
            try? Data((etag + "\n").utf8).write(to: URL(fileURLWithPath: tagPath))
        } else {
            unlink(tagPath)
        }
    }

    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard (200..<300).contains(status) else { return refusal.receive(bytes) }
        guard let file, fwrite(bytes.baseAddress, 1, bytes.count, file) == bytes.count else {
            writeFailed = true
            return false
        }
        return true
    }

    func close() throws(ClientFailure) {
        defer { file = nil }
        guard let file else {
            if writeFailed { throw .invalidInput("the server answered a range that does not continue \(part)") }
            return
        }
        let flushed = fflush(file) == 0 && fsync(fileno(file)) == 0
        fclose(file)
        guard flushed, !writeFailed else { throw .invalidInput("cannot write \(part): \(String(cString: strerror(errno)))") }
    }
}
