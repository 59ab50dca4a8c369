import Loop

/// Carries a loop-thread object through a `@Sendable` closure (a writer completion) back to the
/// loop, where alone it is touched. The caller guarantees the hop: `value` is only read inside
/// `EventLoop.execute`.
struct LoopOwned<Value: AnyObject>: @unchecked Sendable {
    let value: Value
}
