// Why leak.supp suppresses leaks allocated under `StoredRegionCache`: a value still reachable at
// exit from a global is reported as a "Direct leak" when the only pointer to it sits in the
// payload of a multi-payload enum, because Swift keeps the enum's case in that pointer's spare
// bits, where LeakSanitizer cannot see an address. `RegionDefinition.Content` is such an enum
// (`.style(url:)`, `.tiles(TemplateSource)`, `.archive(url:)`), and `StoredRegionCache.shared`
// holds decoded definitions for the life of the process: the arrays of a tiles region's
// template (its segments) are reported though the cache holds them.
//
//   swiftc -sanitize=address scripts/sanitizers/enum-payload-leak.swift -o /tmp/enum-payload-leak
//   ASAN_OPTIONS=detect_leaks=1 /tmp/enum-payload-leak   # exits 1: "Direct leak of 48 byte(s)"
final class Cache: @unchecked Sendable { var entries: [String: Content] = [:] }
struct Source { let template: String; let parts: [Part]; let names: [String] }
enum Part { case literal(String), z, x, y }
enum Content { case style(url: String), tiles(Source), archive(url: String) }
let cache = Cache()  // alive until exit, referenced by this global

@inline(never) func fill() {
    var parts: [Part] = []
    for index in 0..<3 { parts += [.literal("part \(index) " + String(repeating: "x", count: 20)), .z] }
    cache.entries["key"] = .tiles(Source(template: "https://example.org/{z}/{x}/{y}.pbf", parts: parts, names: ["a"]))
}
fill()
print(cache.entries.count)
