import Foundation
import Store

/// A conditional state change, checked and applied in one writer transaction so a download never
/// overwrites a state the API set meanwhile (a suspend racing the start of a download).
struct PackTransition: Sendable {
    let packID: Int64
    let from: Set<String>
    let to: String
    let errorJSON: String?

    /// The previous state when the change applied; nil when the pack is gone or in another state.
    func apply(_ database: OfflineDatabase) throws -> String? {
        try database.database.transaction {
            guard let current = try database.packState(packID), from.contains(current) else { return nil }
            try database.setPackState(packID, state: to, errorJSON: errorJSON, now: Int64(Date().timeIntervalSince1970))
            return current
        }
    }
}
