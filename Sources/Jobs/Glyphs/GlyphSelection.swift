import Foundation
import Loop
import Packs
import Plan

/// Chooses the glyph ranges of a `"glyphs": "region"` pack from what it stored, on the loop
/// thread: every stored tile the label layers read, page by page on reading threads (a page is a
/// bounded number of tiles and bytes: memory stays flat whatever the pack's size), then its GeoJSON
/// sources (stored with the pack, or inline in the style). What the labels need is a few words
/// per font stack, carried from page to page; the needed ranges are the candidates it holds.
public final class GlyphSelection {
    public struct Outcome: Sendable {
        public var needed: [PlannedResource]
        public var skipped: SkippedGlyphRanges
        /// Tiles read and features whose labels were gathered (for logs and benchmarks).
        public var tiles: Int
        public var labelledFeatures: Int
        public var unreadableTiles: Int
    }

    private let loop: EventLoop
    private let packID: Int64
    private let subset: GlyphSubset
    private let store: any PackStore
    /// The GeoJSON sources gathered while the tiles downloaded (nil: all read from the store).
    private let geoJSON: GeoJSONLabelScan?
    private var stopped = false

    init(loop: EventLoop, packID: Int64, subset: GlyphSubset, store: any PackStore, geoJSON: GeoJSONLabelScan?) {
        self.loop = loop
        self.packID = packID
        self.subset = subset
        self.store = store
        self.geoJSON = geoJSON
    }

    func stop() {
        stopped = true
    }

    /// Once everything submitted before is committed (the job's last tiles), reads the stored
    /// tiles and GeoJSON; `then` gets the choice, or the error a job fails with.
    func runOnceCommitted(then: @escaping (Result<Outcome, PackError>) -> Void) {
        // Two carriers (see `StoredLookup.link`): the selection and the completion.
        let owned = LoopBound(self, loop: loop)
        let completion = LoopBound(then, loop: loop)
        store.flush {
            let selection = owned.value
            guard !selection.stopped else { return }
            selection.run { result in
                completion.value(result.mapError {
                    PackError(.storageError, "reading the stored tiles to choose glyph ranges failed: \($0)")
                })
            }
        }
    }

    /// Reads the stored tiles and GeoJSON; `then` gets the choice, or the store's error.
    func run(then: @escaping (Result<Outcome, any Error>) -> Void) {
        let scanner = StoredTileLabels(subset: subset)
        page(after: 0, scanner: scanner, glyphs: LabelGlyphs(), tiles: 0, unreadable: 0, then: then)
    }

    private func page(after rowID: Int64, scanner: StoredTileLabels, glyphs: LabelGlyphs, tiles: Int, unreadable: Int,
                      then: @escaping (Result<Outcome, any Error>) -> Void) {
        let packID = packID
        store.read({ reader -> (LabelGlyphs, GlyphChoice.Page) in
            var glyphs = glyphs
            let page = try GlyphChoice.readPage(reader, packID: packID, scanner: scanner, after: rowID, into: &glyphs)
            return (glyphs, page)
        }) { [weak self] result in
            guard let self, !stopped else { return }
            switch result {
            case .failure(let error):
                then(.failure(error))
            case .success(let (glyphs, page)):
                if let last = page.lastRowID {
                    self.page(after: last, scanner: scanner, glyphs: glyphs, tiles: tiles + page.tiles,
                              unreadable: unreadable + page.unreadableTiles, then: then)
                } else {
                    finish(glyphs: glyphs, tiles: tiles, unreadable: unreadable, then: then)
                }
            }
        }
    }

    /// The GeoJSON sources (once those gathered during the download are), then the choice and the
    /// known sizes of what it leaves out.
    private func finish(glyphs: LabelGlyphs, tiles: Int, unreadable: Int, then: @escaping (Result<Outcome, any Error>) -> Void) {
        guard let geoJSON else { return finish(glyphs: glyphs, gathered: [:], tiles: tiles, unreadable: unreadable, then: then) }
        geoJSON.whenIdle { [weak self] gathered in
            self?.finish(glyphs: glyphs, gathered: gathered, tiles: tiles, unreadable: unreadable, then: then)
        }
    }

    private func finish(glyphs: LabelGlyphs, gathered: [String: LabelGlyphs], tiles: Int, unreadable: Int,
                        then: @escaping (Result<Outcome, any Error>) -> Void) {
        let (packID, subset) = (packID, subset)
        store.read({ reader -> Outcome in
            var outcome = try GlyphChoice.choose(reader, packID: packID, subset: subset, glyphs: glyphs, gathered: gathered)
            outcome.tiles = tiles
            outcome.unreadableTiles = unreadable
            return outcome
        }) { [weak self] result in
            guard let self, !stopped else { return }
            then(result)
        }
    }
}

/// The reads of a glyph choice, on a reading thread: pages of stored tiles, then the GeoJSON and
/// the choice. `GlyphSelection` runs them off the loop; a benchmark can run them on a reader.
public enum GlyphChoice {
    public struct Page: Sendable {
        /// The page's last tile row id, nil when there were no more tiles.
        public var lastRowID: Int64?
        public var tiles: Int
        public var unreadableTiles: Int
    }

    /// Tiles and bytes read per page.
    public static let pageTiles = 512
    public static let pageBytes = 16 << 20

    /// Reads the next page of the pack's tiles after `rowID` into `glyphs`.
    public static func readPage(_ reader: any ResourceIndex, packID: Int64, scanner: StoredTileLabels, after rowID: Int64,
                                into glyphs: inout LabelGlyphs) throws -> Page {
        let page = try reader.tileBodies(packID: packID, urlTemplates: scanner.urlTemplates, afterRowID: rowID,
                                         limit: pageTiles, maxBytes: pageBytes)
        let unreadable = scanner.add(page, to: &glyphs)
        return Page(lastRowID: page.last?.rowID, tiles: page.count, unreadableTiles: unreadable)
    }

    /// Adds the GeoJSON sources to `glyphs` — those in `gathered` (by source id) as gathered while
    /// the tiles downloaded, the others read from the store — and chooses: the needed ranges and
    /// what is left out (with the stored sizes of skipped ranges held elsewhere).
    public static func choose(_ reader: any ResourceIndex, packID: Int64, subset: GlyphSubset, glyphs: LabelGlyphs,
                              gathered: [String: LabelGlyphs] = [:]) throws -> GlyphSelection.Outcome {
        var glyphs = glyphs
        for source in subset.geoJSONSources {
            if let labels = gathered[source.id] {
                glyphs.formUnion(labels)
                continue
            }
            switch source.data {
            case .inline(let document):
                glyphs.formUnion(subset.glyphs(ofGeoJSON: document, source: source))
            case .url(let url):
                let stored = try reader.resource(.resource(url: url, kind: .source), linkedTo: packID)
                if let body = try? stored?.body?.decoded() { glyphs.formUnion(geoJSONGlyphs(body, source: source, subset: subset)) }
            }
        }
        let (needed, skipped) = subset.resources(for: glyphs.needs)
        let sizes = try reader.storedSizes(urls: skipped.map(\.url))
        let known = Int64(sizes.count)
        let bytes = sizes.values.reduce(0, +)
        return GlyphSelection.Outcome(
            needed: needed,
            skipped: SkippedGlyphRanges(ranges: Int64(skipped.count), bytes: known > 0 ? bytes : nil, rangesWithKnownBytes: known),
            tiles: 0, labelledFeatures: glyphs.labelledFeatures, unreadableTiles: 0)
    }
}

extension GlyphChoice {
    /// What the labels of a GeoJSON source need, from its body (gzip or not) as fetched or
    /// stored; nothing when it is not a GeoJSON document MapLibre could read.
    public static func geoJSONGlyphs(_ body: [UInt8], source: GeoJSONLabelSource, subset: GlyphSubset) -> LabelGlyphs {
        guard let plain = try? ZlibCodec.gunzippedIfGzip(body, limit: ZlibCodec.defaultInflateLimit),
              let document = GlyphSubset.geoJSONDocument(plain) else { return LabelGlyphs() }
        return subset.glyphs(ofGeoJSON: document, source: source)
    }
}

/// A job that chooses glyph ranges once its tiles are committed: a download, a revalidation.
protocol GlyphChoosingJob: AnyObject {
    var ended: Bool { get }
    var glyphSelection: GlyphSelection? { get set }
    func glyphsChosen(_ outcome: GlyphSelection.Outcome)
    func end(_ event: PackLifecycle.Event)
}

extension GlyphChoosingJob {
    /// Starts choosing (with the GeoJSON sources `geoJSON` gathered); the job hears the choice,
    /// or ends failed.
    func chooseGlyphs(_ subset: GlyphSubset, packID: Int64, store: any PackStore, loop: EventLoop,
                      geoJSON: GeoJSONLabelScan? = nil) {
        let selection = GlyphSelection(loop: loop, packID: packID, subset: subset, store: store, geoJSON: geoJSON)
        glyphSelection = selection
        selection.runOnceCommitted { [weak self] result in
            guard let self, !ended else { return }
            glyphSelection = nil
            switch result {
            case .failure(let error): end(.fail(error))
            case .success(let outcome): glyphsChosen(outcome)
            }
        }
    }
}
