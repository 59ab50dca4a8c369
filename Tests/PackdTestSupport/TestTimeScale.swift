import Foundation

/// How many times longer a test may wait than on a plain debug build. `make sanitize` sets
/// `PACKD_TEST_TIME_SCALE` (ThreadSanitizer slows packd 5–15×); unset, empty or below 1 means 1.
/// Only deadlines scale — the work a test does and what it asserts stay the same.
public enum TestTimeScale {
    public static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment["PACKD_TEST_TIME_SCALE"], let value = Double(text),
              value.isFinite, value >= 1 else { return 1 }
        return min(value, 100)
    }()

    public static func scaled(_ duration: Duration) -> Duration { duration * factor }
    public static func scaled(seconds: Double) -> Double { seconds * factor }
}
