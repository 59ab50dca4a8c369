import Foundation

/// Writes JSON with every number as a double (`14.0`, never `14`) and object keys in a fixed
/// order. MapLibre's region definition decoder (rapidjson) rejects whole numbers written
/// without a fraction, which `JSONSerialization` would produce.
enum DoubleJSONWriter {
    /// An object whose top-level keys keep the given order; nested objects get sorted keys.
    static func write(_ fields: [(String, Any)]) -> String {
        var output = "{"
        for (index, (key, value)) in fields.enumerated() {
            if index > 0 { output += "," }
            appendString(key, to: &output)
            output += ":"
            appendValue(value, to: &output)
        }
        return output + "}"
    }

    private static func appendValue(_ value: Any, to output: inout String) {
        if let bool = JSONScalar.bool(value) {
            output += bool ? "true" : "false"
            return
        }
        if let number = JSONScalar.double(value) {
            appendNumber(number, to: &output)
            return
        }
        switch value {
        case let string as String:
            appendString(string, to: &output)
        case let array as [Any]:
            output += "["
            for (index, element) in array.enumerated() {
                if index > 0 { output += "," }
                appendValue(element, to: &output)
            }
            output += "]"
        case let object as [String: Any]:
            output += write(object.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        default:
            output += "null"
        }
    }

    private static func appendNumber(_ number: Double, to output: inout String) {
        // Swift's description is the shortest round-trip form and always has a "." or "e".
        output += number.isFinite ? String(number) : "null"
    }

    private static func appendString(_ string: String, to output: inout String) {
        output += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": output += "\\\""
            case "\\": output += "\\\\"
            case "\n": output += "\\n"
            case "\r": output += "\\r"
            case "\t": output += "\\t"
            case _ where scalar.value < 0x20:
                output += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
            default: output.unicodeScalars.append(scalar)
            }
        }
        output += "\""
    }
}
