/// Tells when a pack's start area is settled and when it is whole, as a download walks it
/// nearest first: the start area's bands come first, so it is settled once the walk has moved
/// past them, every one of their lookups (and links) is committed, and every tile they left to
/// fetch is resolved; it is whole when settled and every such tile was stored (a body or "no
/// content"). Until it is settled the download starts no tile beyond it, so the start area's
/// tiles are committed before any other (a tile that failed for good leaves it incomplete for
/// this run; a resume tries again). Each callback runs once. Loop thread only.
final class StartAreaWatch {
    private var bandsOpen = 0
    private var tilesOpen = 0
    private var walkedPast = false
    private var incomplete = false
    private(set) var isSettled = false
    /// Settled: tiles beyond the start area may start.
    var onSettled: (() -> Void)?
    /// Whole: the download waits for the commit and records it.
    var onWhole: (() -> Void)?

    /// A band's lookup begins.
    func bandStarted(inStartArea: Bool) {
        if inStartArea { bandsOpen += 1 } else { walkedPast = true }
        check()
    }

    /// A start-area band's lookup (and its links) committed.
    func bandSettled() {
        bandsOpen -= 1
        check()
    }

    /// Every band was handed out.
    func walkEnded() {
        walkedPast = true
        check()
    }

    func tilesQueued(_ count: Int) {
        tilesOpen += count
    }

    /// A start-area tile resolved: handed to the writer (`stored`), or failed for good.
    func tileResolved(stored: Bool) {
        tilesOpen -= 1
        if !stored { incomplete = true }
        check()
    }

    private func check() {
        guard !isSettled, walkedPast, bandsOpen == 0, tilesOpen == 0 else { return }
        isSettled = true
        if !incomplete { onWhole?() }
        onSettled?()
    }
}
