import Glibc

/// Whether a range of a file is in the page cache — so sendfile(2) on the loop thread copies it
/// without waiting for the disk — and, where it is not, reading it in on a thread that may wait.
///
/// The check is mincore(2) over a read-only shared mapping of just that range, made and dropped
/// around the call and never touched (no page is faulted in; the mapping only names the file's
/// pages): one mmap, mincore and munmap per window of `SendfileTransfer.window` bytes.
/// Linux answers mincore for a file's pages from the page cache when the caller owns the file or
/// may write it (packd's artifacts and exports); for other files it reports only pages mapped into
/// this process, i.e. none, so each of their windows is read in on the thread pool first: slower,
/// never blocking.
enum PageCacheResidency {
    static let pageSize = max(4096, sysconf(Int32(_SC_PAGESIZE)))

    /// Whether every page of `range` of `file` is in the page cache; false when that cannot be
    /// told (the file cannot be mapped).
    static func isResident(file: Int32, _ range: Range<Int>) -> Bool {
        let first = range.lowerBound / pageSize * pageSize
        let length = range.upperBound - first
        guard length > 0 else { return true }
        guard let mapping = mmap(nil, length, PROT_READ, MAP_SHARED, file, off_t(first)), mapping != MAP_FAILED else {
            return false
        }
        defer { munmap(mapping, length) }
        let pages = (length + pageSize - 1) / pageSize
        // A byte a page: 2 KiB for a window of 8 MiB, on the stack.
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: pages) { vector in
            guard mincore(mapping, length, vector.baseAddress) == 0 else { return false }
            return !vector.contains { $0 & 1 == 0 }
        }
    }

    /// Reads `range` of `file` into the page cache: blocks on the disk, so only off the loop
    /// (the thread pool). Through one 128 KiB buffer, whatever the range. False on a read error
    /// or a file that ends before the range does (sendfile will then say so precisely).
    static func readIn(file: Int32, _ range: Range<Int>) -> Bool {
        posix_fadvise(file, off_t(range.lowerBound), off_t(range.count), POSIX_FADV_WILLNEED)
        let size = 128 * 1024
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: size, alignment: 4096)
        defer { buffer.deallocate() }
        var offset = range.lowerBound
        while offset < range.upperBound {
            let count = pread(file, buffer, min(size, range.upperBound - offset), off_t(offset))
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { return false }
            offset += count
        }
        return true
    }
}
