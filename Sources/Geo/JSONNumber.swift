import Foundation

/// Reads a number out of a JSONSerialization value without accepting booleans, which Foundation
/// hands back as NSNumber too (`[true, false]` must not be the position 1, 0).
enum JSONNumber {
    static func double(_ value: Any) -> Double? {
        // Dispatch on the dynamic type: `as? Double` would bridge booleans (and `is Bool` would
        // take the NSNumber 1), so casts cannot tell them apart.
        let type = Swift.type(of: value)
        if type == Double.self { return value as? Double }
        if type == Int.self { return (value as? Int).map(Double.init) }
        if type == Bool.self { return nil }
        guard let number = value as? NSNumber, !isBoolean(number) else { return nil }
        return number.doubleValue
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
