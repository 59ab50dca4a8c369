import Dispatch

/// Where jwt-kit's key collection (an actor) runs when a fetched JWKS becomes verifiers: a
/// serial dispatch queue of its own, given as the task's executor preference (SE-0417; a default
/// actor runs on its caller's preferred executor). So the work needs neither the loop thread nor
/// Swift's cooperative pool — which packd does not otherwise use, and which a caller blocking its
/// threads (a test runner waiting on the loop) could starve.
final class KeyBuildingExecutor: TaskExecutor, @unchecked Sendable {
    static let shared = KeyBuildingExecutor()

    private let queue = DispatchQueue(label: "packd.oidc-keys")

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
