import Testing

@testable import Plan

@Suite struct ResourceURLTests {
    private let base = "https://maps.example.com/styles/v1/style.json?key=abc#top"

    @Test(arguments: [
        ("tiles.json", "https://maps.example.com/styles/v1/tiles.json"),
        ("./tiles.json", "https://maps.example.com/styles/v1/tiles.json"),
        ("../../data/tiles.json", "https://maps.example.com/data/tiles.json"),
        ("../../../../up.json", "https://maps.example.com/up.json"),
        ("/root.json?x=1", "https://maps.example.com/root.json?x=1"),
        ("//cdn.example.org/a.json", "https://cdn.example.org/a.json"),
        ("HTTP://Other.example.org/{z}/{x}/{y}.png", "HTTP://Other.example.org/{z}/{x}/{y}.png"),
    ])
    func resolvesAgainstTheDocument(_ reference: String, _ expected: String) throws {
        #expect(try ResourceURL.resolve(reference, against: base, pointer: "/p") == expected)
    }

    @Test(arguments: [
        "mapbox://styles/mapbox/streets-v12", "file:///etc/passwd", "data:application/json,{}", "ftp://e.com/a",
        "https://", "https:///nohost", "",
    ])
    func rejectsWhatCannotBeDownloaded(_ reference: String) {
        do {
            _ = try ResourceURL.resolve(reference, against: base, pointer: "/sprite")
            Issue.record("accepted \(reference)")
        } catch {
            #expect(error.code == .unsupportedURL && error.pointer == "/sprite")
        }
    }

    @Test func rejectsOverlongURLs() {
        let long = "https://e.com/" + String(repeating: "a", count: ResourceURL.maxLength)
        #expect(throws: PlanError.self) { try ResourceURL.resolve(long, against: base, pointer: "") }
    }
}
