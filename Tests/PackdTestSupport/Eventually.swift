import Foundation
import Glibc

/// Re-checks `condition` every 2 ms until it holds or `seconds` pass; whether it held. Tests wait
/// for a condition with a generous deadline instead of sleeping, so a loaded 2-core machine only
/// makes them slower, never flaky. The default is the longest any suite used before they shared
/// this (60 s), so no wait got shorter when they were folded together. Scaled by
/// `TestTimeScale` under sanitizers.
public func eventually(within seconds: Double = 60, _ condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(TestTimeScale.scaled(seconds: seconds))
    while Date() < deadline {
        if condition() { return true }
        usleep(2_000)
    }
    return condition()
}
