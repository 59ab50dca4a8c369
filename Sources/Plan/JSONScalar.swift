import Foundation

/// Numbers and booleans from `JSONSerialization`, told apart reliably.
///
/// On Linux a JSON `1` bridges to `Bool` and a JSON `true` to `Double`, so `as? Bool` and
/// `as? Double` cannot be trusted; the boxed `NSNumber`'s type code can (`c` is a boolean).
enum JSONScalar {
    static func double(_ value: Any) -> Double? {
        guard !(value is String), let number = value as? NSNumber, !isBoolean(number) else { return nil }
        return number.doubleValue
    }

    static func bool(_ value: Any) -> Bool? {
        guard !(value is String), let number = value as? NSNumber, isBoolean(number) else { return nil }
        return number.boolValue
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        String(cString: number.objCType) == "c"
    }
}
