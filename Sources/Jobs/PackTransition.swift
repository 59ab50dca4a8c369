import Foundation
import Packs
import Store

/// A conditional state change, checked and applied in one writer transaction so a download never
/// overwrites a state the API set meanwhile (a suspend racing the start of a download).
struct PackTransition: Sendable {
    let packID: Int64
    let from: Set<PackState>
    let to: PackState
    let error: PackError?

    /// The previous state when the change applied; nil when the pack is gone or in another state.
    func apply(_ database: OfflineDatabase) throws -> PackState? {
        try database.database.transaction {
            guard let current = try database.packState(packID), from.contains(current) else { return nil }
            try database.setPackState(packID, state: to, error: error, now: Int64(Date().timeIntervalSince1970))
            return current
        }
    }
}
