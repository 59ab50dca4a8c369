// The evidence for the `Foundation7ProcessC3run` entry in leak.supp: Foundation's Process, run to
// completion and released, in a program with no code of packd's. LeakSanitizer reports one
// "Direct leak of 32 byte(s)" allocated by swift_weakAssign inside Foundation.Process.run: the
// side table of a weak reference Foundation keeps where LeakSanitizer cannot see it.
//
//   swiftc -sanitize=address scripts/sanitizers/foundation-process-leak.swift -o /tmp/process-leak
//   ASAN_OPTIONS=detect_leaks=1 /tmp/process-leak   # exits 1 with that report
//   LSAN_OPTIONS=suppressions=scripts/sanitizers/leak.supp ASAN_OPTIONS=detect_leaks=1 /tmp/process-leak   # exits 0
import Foundation

for _ in 0..<2 {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/true")
    try process.run()
    process.waitUntilExit()
}
print("ran /bin/true twice")
