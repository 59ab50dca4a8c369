import Loop
import Plan

/// The labels of a `"glyphs": "region"` download's GeoJSON sources, gathered while its tiles
/// download, on the thread pool: an inline source's data at once, a source's fetched body as soon
/// as it is encoded for the store. Parsing a GeoJSON document is the choice's largest fixed cost
/// (tens of milliseconds for a few hundred features); gathered here, it overlaps the tiles and the
/// choice at the end waits for the stored tiles only. A source not gathered (its body was stored
/// before, by another pack, and only linked) is read from the store at the choice, as before.
final class GeoJSONLabelScan {
    private let loop: EventLoop
    private let subset: GlyphSubset
    /// The URL sources whose body has not arrived, by URL.
    private var awaitingBody: [String: [GeoJSONLabelSource]] = [:]
    private var running = 0
    /// What each gathered source's labels need, by source id.
    private var gathered: [String: LabelGlyphs] = [:]
    private var waiting: [([String: LabelGlyphs]) -> Void] = []
    private var stopped = false

    init(subset: GlyphSubset, loop: EventLoop) {
        self.loop = loop
        self.subset = subset
        for source in subset.geoJSONSources {
            switch source.data {
            case .inline(let document): gather(source.id) { subset.glyphs(ofGeoJSON: document, source: source) }
            case .url(let url): awaitingBody[url, default: []].append(source)
            }
        }
    }

    /// Whether `url` is the data of a source not gathered yet (its body is worth keeping).
    func awaits(_ url: String) -> Bool {
        awaitingBody[url] != nil
    }

    /// `url`'s body, as fetched, is stored: the sources whose data it is are gathered from it.
    func bodyStored(url: String, body: [UInt8]) {
        guard let sources = awaitingBody.removeValue(forKey: url) else { return }
        let subset = subset
        for source in sources { gather(source.id) { GlyphChoice.geoJSONGlyphs(body, source: source, subset: subset) } }
    }

    /// `then` gets the gathered sources once none is being gathered.
    func whenIdle(_ then: @escaping ([String: LabelGlyphs]) -> Void) {
        guard !stopped else { return }
        if running == 0 { then(gathered) } else { waiting.append(then) }
    }

    func stop() {
        stopped = true
        waiting = []
    }

    private func gather(_ sourceID: String, _ work: @escaping @Sendable () -> LabelGlyphs) {
        running += 1
        loop.runOnThreadPool(work) { [weak self] labels in
            guard let self, !stopped else { return }
            running -= 1
            gathered[sourceID] = labels
            guard running == 0 else { return }
            let waiting = waiting
            self.waiting = []
            for then in waiting { then(gathered) }
        }
    }
}
