#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A file written by an export (or read back by a decoder) through plain POSIX calls: exports
/// are streamed to disk in pieces and never assembled in memory, and the PMTiles writer needs
/// positioned reads of what it already wrote (to confirm a duplicate tile byte for byte) and a
/// positioned write of the header once the directories are known.
final class ExportFile {
    struct Failure: Error, CustomStringConvertible {
        let operation: String
        let path: String
        let errno: Int32
        var description: String { "\(operation) \(path): \(String(cString: strerror(errno)))" }
    }

    let path: String
    private var descriptor: Int32
    /// Bytes appended so far (the next append's offset).
    private(set) var size: UInt64 = 0
    private static let bufferCapacity = 1 << 20
    private var pending: [UInt8] = []

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { close() }

    /// Creates (or truncates) `path` for writing.
    static func create(_ path: String) throws(Failure) -> ExportFile {
        let fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw Failure(operation: "create", path: path, errno: errno) }
        return ExportFile(path: path, descriptor: fd)
    }

    static func openForReading(_ path: String) throws(Failure) -> ExportFile {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw Failure(operation: "open", path: path, errno: errno) }
        let file = ExportFile(path: path, descriptor: fd)
        var info = stat()
        if fstat(fd, &info) == 0 { file.size = UInt64(info.st_size) }
        return file
    }

    /// Appends through a buffer: an archive is written one ~10 KB tile at a time, and a system
    /// call per tile cost more than the copy. Reads, overwrites and `finish` flush it first.
    func append(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        if pending.count + bytes.count > Self.bufferCapacity { try flush() }
        if bytes.count >= Self.bufferCapacity {
            try writeAll(bytes)
        } else {
            pending.append(contentsOf: bytes)
        }
        size += UInt64(bytes.count)
    }

    /// Writes out what `append` buffered.
    func flush() throws(Failure) {
        guard !pending.isEmpty else { return }
        var failure: Failure?
        pending.withUnsafeBytes { raw in
            do throws(Failure) { try writeAll(raw) } catch { failure = error }
        }
        pending.removeAll(keepingCapacity: true)
        if let failure { throw failure }
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws(Failure) {
        var done = 0
        while done < bytes.count {
            let written = write(descriptor, bytes.baseAddress! + done, bytes.count - done)
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "write", path: path, errno: errno)
            }
            done += written
        }
    }

    func append(_ bytes: [UInt8]) throws(Failure) {
        // withUnsafeBytes only rethrows untyped errors; carry the typed one out by hand.
        var failure: Failure?
        bytes.withUnsafeBytes { raw in
            do throws(Failure) { try append(raw) } catch { failure = error }
        }
        if let failure { throw failure }
    }

    /// Whether the file holds exactly `bytes` at `offset`: the PMTiles writer confirms a
    /// duplicate tile before pointing at it. Still-buffered bytes are compared in memory, so a
    /// run of repeated tiles does not force a flush per tile.
    func holds(_ bytes: UnsafeRawBufferPointer, at offset: UInt64) throws(Failure) -> Bool {
        let end = offset.addingReportingOverflow(UInt64(bytes.count))
        guard !end.overflow, end.partialValue <= size else { return false }
        let flushed = size - UInt64(pending.count)
        if offset >= flushed {
            let start = Int(offset - flushed)
            return pending.withUnsafeBytes { raw in
                bytes.count == 0 || memcmp(raw.baseAddress! + start, bytes.baseAddress!, bytes.count) == 0
            }
        }
        let stored = try read(at: offset, count: bytes.count)
        return stored.withUnsafeBytes { raw in
            raw.count == bytes.count && (bytes.count == 0 || memcmp(raw.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
        }
    }

    /// Reads exactly `count` bytes at `offset` (fewer only at end of file).
    func read(at offset: UInt64, count: Int) throws(Failure) -> [UInt8] {
        try flush()
        var bytes = [UInt8](repeating: 0, count: count)
        var done = 0
        while done < count {
            let got = bytes.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + done, count - done, off_t(offset) + off_t(done))
            }
            if got < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "read", path: path, errno: errno)
            }
            if got == 0 { break }
            done += got
        }
        bytes.removeSubrange(done...)
        return bytes
    }

    /// Overwrites bytes at `offset` (inside what was already appended).
    func overwrite(_ bytes: [UInt8], at offset: UInt64) throws(Failure) {
        try flush()
        var done = 0
        while done < bytes.count {
            let written = bytes.withUnsafeBytes { raw in
                pwrite(descriptor, raw.baseAddress! + done, raw.count - done, off_t(offset) + off_t(done))
            }
            if written < 0 {
                if errno == EINTR { continue }
                throw Failure(operation: "write", path: path, errno: errno)
            }
            done += written
        }
    }

    /// Closes without flushing: an export that got this far without `flush` failed anyway.
    func close() {
        if descriptor >= 0 {
            #if canImport(Glibc)
            Glibc.close(descriptor)
            #else
            Darwin.close(descriptor)
            #endif
            descriptor = -1
        }
    }
}
