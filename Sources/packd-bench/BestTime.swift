/// The shortest of `repetitions` timed runs of `body`, in seconds: the run least disturbed by the
/// rest of the machine.
func bestSeconds(of repetitions: Int, _ body: () -> Void) -> Double {
    var best = Double.infinity
    for _ in 0..<repetitions {
        let start = ContinuousClock.now
        body()
        let elapsed = start.duration(to: .now)
        best = min(best, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
    return best
}
