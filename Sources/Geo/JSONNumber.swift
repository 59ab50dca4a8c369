import Foundation

/// Reads a number out of a JSONSerialization value without accepting booleans, which Foundation
/// hands back as NSNumber too (`[true, false]` must not be the position 1, 0).
enum JSONNumber {
    static func double(_ value: Any) -> Double? {
        switch value {
        case let value as Double where type(of: value) == Double.self: return value
        case let value as Int where type(of: value) == Int.self: return Double(value)
        case let number as NSNumber:
            if isBoolean(number) { return nil }
            return number.doubleValue
        default:
            return nil
        }
    }

    private static func isBoolean(_ number: NSNumber) -> Bool {
        #if canImport(Darwin)
        return CFGetTypeID(number) == CFBooleanGetTypeID()
        #else
        // swift-corelibs-foundation reports "c" (char) only for booleans from JSON.
        return String(cString: number.objCType) == "c"
        #endif
    }
}
