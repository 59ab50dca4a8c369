import Foundation

// Built by `make fuzz` with `--sanitize=fuzzer` and `-D PACKD_FUZZ_ENGINE`: libFuzzer supplies
// `main` and calls `LLVMFuzzerTestOneInput` with each input for the target named in
// `PACKD_FUZZ_TARGET`. A plain `swift build` makes a replay tool instead
// (`packd-fuzz TARGET FILE…`), so the targets always compile and a saved input can be rerun
// without the fuzzer.

#if PACKD_FUZZ_ENGINE
nonisolated(unsafe) private var selected: FuzzTarget?

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    if selected == nil {
        let name = ProcessInfo.processInfo.environment["PACKD_FUZZ_TARGET"] ?? ""
        guard let target = FuzzTarget(rawValue: name) else {
            FileHandle.standardError.write(Data("PACKD_FUZZ_TARGET must be one of: \(FuzzTarget.allNames)\n".utf8))
            exit(2)
        }
        selected = target
    }
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
    selected!.run(bytes)
    return 0
}
#else
@main struct FuzzReplay {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            print("usage: packd-fuzz TARGET FILE|DIRECTORY…  (targets: \(FuzzTarget.allNames))")
            exit(2)
        }
        var count = 0
        for path in arguments.dropFirst() {
            for file in inputFiles(path) {
                guard let data = FileManager.default.contents(atPath: file) else {
                    print("cannot read \(file)")
                    exit(1)
                }
                target.run(Array(data))
                count += 1
            }
        }
        print("\(name): \(count) inputs ran without a failure")
    }

    static func inputFiles(_ path: String) -> [String] {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), isDirectory.boolValue else { return [path] }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
        return names.filter { !$0.hasPrefix(".") }.sorted().map { path + "/" + $0 }
    }
}
#endif
