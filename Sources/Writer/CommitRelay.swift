/// Lets a writer's commit callback, which is made before the store that owns the writer exists,
/// reach that store once it does. Weak: the writer never keeps its store alive.
public final class CommitRelay<Owner: AnyObject>: @unchecked Sendable {
    public weak var owner: Owner?

    public init() {}
}
