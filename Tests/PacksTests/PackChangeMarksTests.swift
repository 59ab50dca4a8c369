import Packs
import Testing

/// The counts both pack-document caches are tagged with: a pack's value moves at each change
/// that may have touched it, stays at others', and never goes back — folding included.
@Suite struct PackChangeMarksTests {
    @Test func aPackMovesAtItsOwnChangesAndAtChangesOfEveryPackOnly() {
        var marks = PackChangeMarks(capacity: 8)
        let (a, b) = (marks.value(of: 1), marks.value(of: 2))
        marks.mark([1])
        #expect(marks.value(of: 1) > a && marks.value(of: 2) == b)
        marks.mark([Int64]())
        #expect(marks.count == 2 && marks.value(of: 2) == b)
        let (a1, b1) = (marks.value(of: 1), marks.value(of: 2))
        marks.markEveryPack()
        #expect(marks.value(of: 1) > a1 && marks.value(of: 2) > b1 && marks.value(of: 99) > b1)
    }

    @Test func pastItsCapacityTheMarksFoldAndNoValueGoesBack() {
        var marks = PackChangeMarks(capacity: 4)
        var seen: [Int64: UInt64] = [:]
        for packID in Int64(1)...20 {
            marks.mark([packID])
            for other in Int64(1)...20 {
                let value = marks.value(of: other)
                #expect(value >= seen[other, default: 0], "pack \(other) went back")
                seen[other] = value
            }
        }
        // Marks 1–4 were held, the fifth folded them (as did every fifth since): an untouched pack
        // moved with each fold, and five packs at once do not fit four.
        #expect(marks.value(of: 99) == 20)
        marks.mark([1, 2, 3, 4, 5])
        #expect(marks.value(of: 6) == marks.count, "five marks in a capacity of four fold at once")
    }
}
