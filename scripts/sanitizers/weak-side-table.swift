// Why no `leak:formWeakReference` entry is in leak.supp, although LeakSanitizer reports such
// leaks: an object that is still alive, and visibly referenced, at exit, and that once had a weak
// reference, has its side table reported as a "Direct leak of 32 byte(s)" allocated by
// swift_weakInit: the runtime keeps the side table's address encoded in the object's reference
// count, where LeakSanitizer cannot see it. Suppressing that would also hide every real cycle
// whose objects had a weak reference (the report's only direct entry is then the side table), so
// packd avoids weak references to objects that can outlive `packd serve`'s shutdown instead.
//
//   swiftc -sanitize=address scripts/sanitizers/weak-side-table.swift -o /tmp/weak-side-table
//   ASAN_OPTIONS=detect_leaks=1 /tmp/weak-side-table   # exits 1: "Direct leak of 32 byte(s)"
final class Writer { var value = 1 }
let writer = Writer()  // alive until exit, referenced by this global

func touch() {
    weak var weakWriter = writer  // forms the side table; the weak reference ends here
    print(weakWriter?.value ?? 0)
}
touch()
