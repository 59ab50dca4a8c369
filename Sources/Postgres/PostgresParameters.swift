/// Statement parameters encoded for libpq: every value's binary form in one buffer, with the
/// pointer, length, format and type arrays `PQexecPrepared`/`PQsendQueryPrepared` take.
struct PostgresParameters {
    let types: [UInt32]
    private var buffer: [UInt8] = []
    /// -1 for NULL.
    private var offsets: [Int] = []
    private var lengths: [Int32] = []

    init(_ parameters: [PostgresValue]) throws(PostgresError) {
        types = parameters.map(\.type.rawValue)
        offsets.reserveCapacity(parameters.count)
        lengths.reserveCapacity(parameters.count)
        for parameter in parameters {
            let start = buffer.count
            if parameter.encode(into: &buffer) {
                guard buffer.count - start <= Int(Int32.max) else {
                    throw PostgresError(kind: .misuse, message: "a parameter is larger than 2 GiB")
                }
                offsets.append(start)
                lengths.append(Int32(buffer.count - start))
            } else {
                offsets.append(-1)
                lengths.append(0)
            }
        }
        // Never empty, so every non-NULL value (even an empty string) gets a non-null pointer.
        buffer.append(0)
    }

    var count: Int32 { Int32(types.count) }

    /// Calls `body` with the parameter count and pointers valid for its duration.
    func withPointers<R, E: Error>(
        _ body: (Int32, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?) throws(E) -> R
    ) throws(E) -> R {
        let formats = [Int32](repeating: 1, count: types.count)
        let result: Result<R, E> = buffer.withUnsafeBufferPointer { bytes in
            let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
            let values: [UnsafePointer<CChar>?] = offsets.map { $0 < 0 ? nil : base + $0 }
            return values.withUnsafeBufferPointer { valuePointers in
                lengths.withUnsafeBufferPointer { lengthPointers in
                    formats.withUnsafeBufferPointer { formatPointers in
                        do throws(E) {
                            return .success(try body(count, valuePointers.baseAddress, lengthPointers.baseAddress,
                                                     formatPointers.baseAddress))
                        } catch {
                            return .failure(error)
                        }
                    }
                }
            }
        }
        return try result.get()
    }
}
