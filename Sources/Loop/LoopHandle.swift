import CUV

/// The ownership rule every uv handle in packd follows, as libuv and curl's `multi-uv.c` do:
/// the handle's memory is allocated (never the address of a Swift field, which may move), its
/// `data` slot holds a retained reference to the Swift object that owns it, and both are given up
/// only in the close callback — the first moment libuv promises never to touch the handle again.
///
/// An owner therefore lives at least until its handle is closed, even if every Swift reference to
/// it is dropped; forgetting `close()` is a leak, never a use-after-free.
public protocol LoopHandleOwner: AnyObject {
    /// Called on the loop thread once libuv has finished with the handle.
    func handleDidClose()
}

extension LoopHandleOwner {
    public func handleDidClose() {}
}

/// Allocates zeroed memory for a uv handle of type `T` and stores a retained `owner` in its data slot.
public func allocateHandle<T>(_ type: T.Type, owner: AnyObject) -> UnsafeMutablePointer<T> {
    let pointer = UnsafeMutablePointer<T>.allocate(capacity: 1)
    UnsafeMutableRawPointer(pointer).initializeMemory(as: UInt8.self, repeating: 0, count: MemoryLayout<T>.size)
    UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: uv_handle_t.self).pointee.data =
        Unmanaged.passRetained(owner).toOpaque()
    return pointer
}

/// The owner stored in a handle's data slot, without changing its retain count.
@inline(__always)
public func handleOwner<O: AnyObject>(_ handle: UnsafeMutableRawPointer?, as type: O.Type) -> O {
    let data = handle!.assumingMemoryBound(to: uv_handle_t.self).pointee.data!
    return Unmanaged<O>.fromOpaque(data).takeUnretainedValue()
}

/// Closes a handle allocated by `allocateHandle`; the memory and the owner's retain are released in
/// the close callback. Closing twice is a no-op.
public func closeHandle<T>(_ pointer: UnsafeMutablePointer<T>) {
    let handle = UnsafeMutableRawPointer(pointer).assumingMemoryBound(to: uv_handle_t.self)
    if uv_is_closing(handle) != 0 { return }
    uv_close(handle, { handle in
        guard let handle else { return }
        if let data = handle.pointee.data {
            let owner = Unmanaged<AnyObject>.fromOpaque(data)
            handle.pointee.data = nil
            (owner.takeUnretainedValue() as? LoopHandleOwner)?.handleDidClose()
            owner.release()
        }
        UnsafeMutableRawPointer(handle).deallocate()
    })
}

/// A libuv error code turned into something a log line or a thrown error can carry.
public struct UVError: Error, CustomStringConvertible, Equatable {
    public let code: Int32
    public let operation: String

    public init(_ code: Int32, _ operation: String) {
        self.code = code
        self.operation = operation
    }

    public var name: String { String(cString: uv_err_name(code)) }
    public var description: String { "\(operation): \(String(cString: uv_strerror(code))) (\(name))" }

    /// Throws when a libuv call returned a negative status.
    @discardableResult
    public static func check(_ status: Int32, _ operation: @autoclosure () -> String) throws -> Int32 {
        if status < 0 { throw UVError(status, operation()) }
        return status
    }
}
