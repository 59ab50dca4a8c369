import Packs
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The first 100 bytes of an SQLite file, checked before SQLite itself reads anything: the size
/// cap, the magic string, and whether the file is as long as its header says (an upload cut off
/// mid-transfer is "truncated", a clearer answer than whatever page SQLite trips over first).
enum SQLiteFileHeader {
    static let magic = Array("SQLite format 3\0".utf8)

    static func check(path: String, maximumBytes: UInt64) throws(ImportError) {
        var info = stat()
        guard stat(path, &info) == 0 else { throw .file("cannot read the upload: \(String(cString: strerror(errno)))") }
        let size = UInt64(info.st_size)
        guard size <= maximumBytes else { throw .tooLarge(size: size, limit: maximumBytes) }
        guard size >= 100 else { throw .notSQLite }
        let file: ExportFile
        let header: [UInt8]
        do {
            file = try ExportFile.openForReading(path)
            header = try file.read(at: 0, count: 100)
        } catch {
            throw .file(error.description)
        }
        file.close()
        guard header.count == 100, Array(header[0..<16]) == magic else { throw .notSQLite }
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
        guard pageSize >= 512, pageSize & (pageSize - 1) == 0 else { throw .corrupt("invalid page size \(rawPageSize)") }
        guard size % UInt64(pageSize) == 0 else { throw .corrupt("file is not a whole number of pages (truncated?)") }
        func u32(_ at: Int) -> UInt32 { header[at..<(at + 4)].reduce(0) { $0 << 8 | UInt32($1) } }
        // The in-header page count is valid when the "version-valid-for" number matches the
        // change counter (SQLite ≥ 3.7.0 writers); then the file must hold exactly that many pages.
        let pageCount = UInt64(u32(28))
        if pageCount > 0, u32(92) == u32(24), pageCount * UInt64(pageSize) != size {
            throw .corrupt("header says \(pageCount) pages of \(pageSize) bytes, file has \(size) bytes (truncated?)")
        }
    }
}
