import Packs

/// A SQLite statement's current row as `PackRecord(row:)` reads it (`PackRecord.selectSQL`).
extension Statement: StoredRowColumns {
    public func int64(_ column: Int) -> Int64 { int64(at: Int32(column)) }
    public func int64OrNil(_ column: Int) -> Int64? { optionalInt64(at: Int32(column)) }
    public func bool(_ column: Int) -> Bool { int64(at: Int32(column)) != 0 }
    public func string(_ column: Int) -> String { string(at: Int32(column)) ?? "" }
    public func stringOrNil(_ column: Int) -> String? { string(at: Int32(column)) }
    public func bytesOrNil(_ column: Int) -> [UInt8]? { blob(at: Int32(column)) }
}
