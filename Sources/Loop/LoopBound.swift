/// A value created and used on the loop thread only that travels through another thread in
/// between (a completion handed to the writer, a download waiting on its commit). The carrier
/// promises the hop back: `value` is read only inside `EventLoop.execute` or another loop callback.
public struct LoopBound<Value>: @unchecked Sendable {
    public let value: Value
    public init(_ value: Value) { self.value = value }
}
