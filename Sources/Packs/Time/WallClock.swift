import Foundation

/// Unix seconds now, as every store write, state change and document timestamp reads it: one
/// injectable clock instead of `Date()` calls scattered through the program. Tests pass a fixed
/// or stepping clock; the server passes `.system`.
public struct WallClock: Sendable {
    private let read: @Sendable () -> Int64

    public init(_ read: @escaping @Sendable () -> Int64) {
        self.read = read
    }

    /// Unix seconds.
    public var now: Int64 { read() }

    /// The system's real-time clock.
    public static let system = WallClock { Int64(Date().timeIntervalSince1970) }

    /// Always `seconds` (tests).
    public static func fixed(_ seconds: Int64) -> WallClock {
        WallClock { seconds }
    }
}
