import Foundation
import Loop
import Packs
import Plan

/// Where a document phase gets its documents: the upstream with the download's retries, the
/// API's upstream client (estimates, one try each), or the store (a revalidation rebuilding its
/// tile templates from what the pack stored).
public protocol DocumentSource: AnyObject {
    /// The document's bytes as sent (gzip allowed), or why there are none. `then` runs later, on
    /// the loop thread.
    func document(_ resource: PlannedResource, then: @escaping (Result<[UInt8], DocumentFailure>) -> Void)
}

/// Why a document phase could not produce a plan.
public enum DocumentFailure: Error, Sendable {
    /// No usable answer for `url`: `status` when the upstream answered.
    case unavailable(url: String, status: Int?, detail: String)
    case unauthorized(url: String, status: Int)
    /// The address policy refused the host of `url`.
    case hostNotAllowed(url: String)
    /// The documents together exceed the phase's byte limit.
    case tooLarge(url: String, detail: String)
    /// The document is not something the planner accepts.
    case invalid(PlanError)
    /// A PMTiles archive whose TileJSON was to be derived cannot be read.
    case archive(ArchiveFailure)
}

/// The first phase of every job that plans a region — download, estimate, revalidation: the
/// style, then its TileJSONs (at most `concurrency` at once), each parsed on the thread pool (a
/// style can be megabytes of JSON; the loop never parses), gunzipped within `maxDocumentBytes`,
/// the documents together within `maxTotalBytes`. The result is the `PlanBuilder` holding the
/// plan. A template region needs no document. Loop thread only; ends exactly once unless stopped.
public final class DocumentPhase {
    public struct Limits: Sendable {
        /// Largest document once inflated.
        public var maxDocumentBytes: Int
        /// All documents of the phase together, as received.
        public var maxTotalBytes: Int
        /// TileJSONs requested at once.
        public var concurrency: Int
        /// Skip TileJSONs that cannot be had (their sources keep no plan) instead of failing:
        /// for rebuilding templates from whatever a pack stored.
        public var bestEffort = false

        public init(maxDocumentBytes: Int, maxTotalBytes: Int, concurrency: Int, bestEffort: Bool = false) {
            self.maxDocumentBytes = maxDocumentBytes
            self.maxTotalBytes = maxTotalBytes
            self.concurrency = concurrency
            self.bestEffort = bestEffort
        }
    }

    private let loop: EventLoop
    private let source: any DocumentSource
    private let limits: Limits
    private var builder: PlanBuilder
    private var pendingTileJSONs: [String] = []
    private var tileJSONs: [(url: String, body: [UInt8])] = []
    private var outstanding = 0
    private var receivedBytes = 0
    private var finished = false
    private var then: ((Result<PlanBuilder, DocumentFailure>) -> Void)?

    public init(region: RegionDefinition, loop: EventLoop, source: any DocumentSource, limits: Limits) {
        self.loop = loop
        self.source = source
        self.limits = limits
        builder = PlanBuilder(region: region)
    }

    public func run(then: @escaping (Result<PlanBuilder, DocumentFailure>) -> Void) {
        self.then = then
        guard let styleURL = builder.region.styleURL else {
            // A template region needs nothing; an archive region, the TileJSON of its archive.
            pendingTileJSONs = builder.missingTileJSONURLs.reversed()
            return pendingTileJSONs.isEmpty ? finish(.success(builder)) : fetchTileJSONs()
        }
        let style = PlannedResource(kind: .style, url: styleURL)
        source.document(style) { [self] result in
            guard !finished else { return }
            switch result {
            case .failure(let failure): finish(.failure(failure))
            case .success(let body):
                guard accept(body, from: styleURL) else { return }
                let current = builder
                let limit = limits.maxDocumentBytes
                loop.runOnThreadPool({ () -> Result<PlanBuilder, PlanError> in
                    var builder = current
                    return Result { () throws(PlanError) in
                        try builder.addStyle(Data(try Self.decoded(body, url: styleURL, limit: limit)))
                        return builder
                    }
                }, then: { [self] parsed in
                    guard !finished else { return }
                    switch parsed {
                    case .failure(let error): finish(.failure(.invalid(error)))
                    case .success(let parsed):
                        builder = parsed
                        pendingTileJSONs = builder.missingTileJSONURLs.reversed()
                        fetchTileJSONs()
                    }
                })
            }
        }
    }

    /// Ends the phase without an answer (the job stopped); late documents are dropped.
    public func stop() {
        finished = true
        then = nil
    }

    private func fetchTileJSONs() {
        guard !pendingTileJSONs.isEmpty || outstanding > 0 else { return addTileJSONs() }
        while outstanding < max(1, limits.concurrency), let url = pendingTileJSONs.popLast() {
            outstanding += 1
            source.document(PlannedResource(kind: .source, url: url)) { [self] result in
                guard !finished else { return }
                outstanding -= 1
                switch result {
                case .success(let body):
                    guard accept(body, from: url) else { return }
                    tileJSONs.append((url, body))
                case .failure where limits.bestEffort:
                    break
                case .failure(let failure):
                    return finish(.failure(failure))
                }
                fetchTileJSONs()
            }
        }
    }

    /// Adds every TileJSON in one pool job, in the order the style named them.
    private func addTileJSONs() {
        let current = builder
        let documents = tileJSONs
        let limits = limits
        loop.runOnThreadPool({ () -> Result<PlanBuilder, PlanError> in
            var builder = current
            let order = Dictionary(uniqueKeysWithValues: current.missingTileJSONURLs.enumerated().map { ($1, $0) })
            for document in documents.sorted(by: { order[$0.url, default: 0] < order[$1.url, default: 0] }) {
                do throws(PlanError) {
                    try builder.addTileJSON(Data(try Self.decoded(document.body, url: document.url, limit: limits.maxDocumentBytes)),
                                            url: document.url)
                } catch {
                    if !limits.bestEffort { return .failure(error) }
                }
            }
            return .success(builder)
        }, then: { [self] result in
            guard !finished else { return }
            finish(result.mapError { .invalid($0) })
        })
    }

    /// Counts the bytes of the documents together; false (and the phase ends) past the limit.
    private func accept(_ body: [UInt8], from url: String) -> Bool {
        receivedBytes += body.count
        guard receivedBytes <= limits.maxTotalBytes else {
            finish(.failure(.tooLarge(url: url, detail: "the style and its TileJSONs exceed \(limits.maxTotalBytes) bytes together")))
            return false
        }
        return true
    }

    private func finish(_ result: Result<PlanBuilder, DocumentFailure>) {
        guard !finished, let then else { return }
        finished = true
        self.then = nil
        then(result)
    }

    /// A document as the parsers need it: `Content-Encoding: gzip` bodies pass through Fetch
    /// as sent, so they are inflated here, within `limit`.
    static func decoded(_ body: [UInt8], url: String, limit: Int) throws(PlanError) -> [UInt8] {
        guard let document = try? ZlibCodec.gunzippedIfGzip(body, limit: limit) else {
            throw PlanError(.documentTooLarge, "the gzip body is corrupt or inflates beyond \(limit) bytes", url: url)
        }
        return document
    }
}
