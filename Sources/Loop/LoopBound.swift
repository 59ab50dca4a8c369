/// A value that belongs to a loop and travels through another thread in between (a completion
/// handed to the writer, a download waiting on its commit, a connection made on the thread pool
/// for the loop to use): it may be made and carried anywhere, and is read only on its loop's
/// thread — inside `EventLoop.execute` or another loop callback. Like swift-nio's `NIOLoopBound`,
/// a debug build checks that on every read; a release build does not.
public struct LoopBound<Value>: @unchecked Sendable {
    public let loop: EventLoop
    private let wrapped: Value

    public init(_ value: Value, loop: EventLoop) {
        self.loop = loop
        wrapped = value
    }

    public var value: Value {
        loop.assertInLoopThread()
        return wrapped
    }
}
