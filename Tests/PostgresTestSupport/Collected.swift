import Foundation

/// Values several threads append to, read once they are done.
public final class Collected<Element>: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Element] = []

    public init() {}

    public func append(_ element: Element) {
        lock.lock()
        storage.append(element)
        lock.unlock()
    }

    public func append(contentsOf elements: [Element]) {
        lock.lock()
        storage.append(contentsOf: elements)
        lock.unlock()
    }

    public var all: [Element] {
        lock.lock()
        defer { lock.unlock() }
        return storage
    }
}
