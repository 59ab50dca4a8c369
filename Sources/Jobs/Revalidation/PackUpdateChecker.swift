import Fetch
import Foundation
import Loop
import Packs
import Plan
import TileFormats

/// What `check-update` asks: whether the upstream changed since a pack was downloaded. The
/// API's seam: `PackUpdateChecker` probes the upstream; tests answer as they need to.
public protocol UpdateChecking: AnyObject {
    /// Calls back once, on the loop thread.
    func check(_ packID: Int64, completion: @escaping (PackUpdateChecker.Outcome) -> Void)
}

/// `check-update`: a cheap probe of whether the upstream changed since a pack was downloaded.
/// The style and every TileJSON the pack stored, plus its first sprite JSON and first glyph
/// range, are asked for once each (`UpstreamResolver`'s probe policy: one attempt, a request is
/// waiting), concurrently, with their stored `ETag`/`Last-Modified`. Any 200 with other bytes
/// (or a 404/410: gone upstream) means an update is available; every probe answering 304 or the
/// stored bytes means none. Nothing is stored. Loop thread only.
public final class PackUpdateChecker: UpdateChecking {
    public enum Outcome: Sendable, Equatable {
        case checked(updateAvailable: Bool)
        /// The pack stored none of the probed resources yet (never downloaded, or a template pack).
        case nothingToCompare
        /// A probe failed: transport error (`status` nil), 401/403, 5xx or another unexpected status.
        case upstreamFailed(url: String, status: Int?, detail: String)
        case storageFailed(String)
    }

    /// What one probe found.
    private enum Probe: Sendable {
        case unchanged, changed
        case failed(url: String, status: Int?, detail: String)
    }

    private let store: any PackStore
    private let resolver: UpstreamResolver
    /// An archive's TileJSON row is probed on the archive itself: its header, `If-None-Match`.
    private let ranges: ResolverRanges
    private let timeouts: FetchRequest.Timeouts
    private let maxBodyBytes: Int

    /// `timeouts` bound each probe (the request waits for all of them, under the API's handler timeout).
    public init(loop: EventLoop, fetcher: Fetcher, store: any PackStore,
                timeouts: FetchRequest.Timeouts = .init(connectMilliseconds: 5_000, totalMilliseconds: 20_000),
                settings: DownloadSettings = DownloadSettings(), clock: WallClock = .system) {
        self.store = store
        self.timeouts = timeouts
        maxBodyBytes = settings.maxBodyBytes
        resolver = UpstreamResolver(loop: loop, fetcher: fetcher, settings: settings, policy: .probe, packID: nil,
                                    clock: clock, listener: nil)
        var probing = settings
        probing.timeouts = timeouts
        ranges = ResolverRanges(resolver: resolver, settings: probing, owner: 0)
    }

    public func check(_ packID: Int64, completion: @escaping (Outcome) -> Void) {
        store.read({ reader in try reader.updateProbes(packID: packID, limit: 64) }) { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error): completion(.storageFailed("\(error)"))
            case .success(let probes) where probes.isEmpty: completion(.nothingToCompare)
            case .success(let probes): run(probes, completion: completion)
            }
        }
    }

    private func run(_ rows: [StoredValidators], completion: @escaping (Outcome) -> Void) {
        var remaining = rows.count
        var found: [Probe] = []
        for row in rows {
            probe(row) { probe in
                found.append(probe)
                remaining -= 1
                guard remaining == 0 else { return }
                if let failure = found.first(where: { if case .failed = $0 { true } else { false } }),
                   case .failed(let url, let status, let detail) = failure {
                    return completion(.upstreamFailed(url: url, status: status, detail: detail))
                }
                completion(.checked(updateAvailable: found.contains { if case .changed = $0 { true } else { false } }))
            }
        }
    }

    /// An archive changed when its validators are not those its TileJSON was stored with.
    private func probeArchive(_ url: String, _ row: StoredValidators, then: @escaping (Probe) -> Void) {
        ranges.read(ArchiveRead(url: url, range: 0...UInt64(PMTilesHeader.size - 1), ifNoneMatch: row.etag)) { result in
            switch result {
            case .notModified: then(.unchanged)
            case .bytes(let first):
                then(ArchiveRevalidation.isUnchanged(first.validator, storedETag: row.etag, modified: row.modified) ? .unchanged : .changed)
            case .replaced(let detail): then(.failed(url: url, status: nil, detail: detail))
            case .failed(let failure):
                let error = failure.packError
                then(.failed(url: url, status: error.status, detail: error.detail))
            case .stopped: then(.failed(url: url, status: nil, detail: FetchError.shutdown.description))
            }
        }
    }

    private func probe(_ row: StoredValidators, then: @escaping (Probe) -> Void) {
        guard case .resource(let url, _) = row.key else { return then(.changed) }
        if let archive = PMTilesSourceURL.archiveURL(ofKey: url) { return probeArchive(archive, row, then: then) }
        let request = FetchRequest(url: url, ifNoneMatch: row.etag, ifModifiedSince: row.modified,
                                   maxBodyBytes: maxBodyBytes, timeouts: timeouts)
        resolver.fetch(request) { [store] resolution in
            switch resolution {
            case .notModified:
                then(.unchanged)
            case .body(let response):
                let body = response.body
                store.read({ reader in BodyComparison.compare(body, with: row.key, in: reader) }) { comparison in
                    switch comparison {
                    case .success(.same): then(.unchanged)
                    case .success(.changed): then(.changed)
                    case .success(.undecodable):
                        then(.failed(url: url, status: response.status, detail: "the body could not be decoded"))
                    case .failure(let error): then(.failed(url: url, status: response.status, detail: "\(error)"))
                    }
                }
            case .noContent:
                then(.changed)
            case .unauthorized(let status):
                then(.failed(url: url, status: status, detail: "the upstream answered HTTP \(status)"))
            case .refused:
                then(.failed(url: url, status: nil, detail: FetchError.blockedAddress.description))
            case .rangeRefused(let error):
                then(.failed(url: url, status: nil, detail: error.description))
            case .failed(let status, let message, _):
                then(.failed(url: url, status: status, detail: status.map { "the upstream answered HTTP \($0)" } ?? message))
            case .stopped:
                then(.failed(url: url, status: nil, detail: FetchError.shutdown.description))
            }
        }
    }
}
