import Fetch
import Foundation
import Loop
import Packs
import Store

/// `check-update`: a cheap probe of whether the upstream changed since a pack was downloaded.
/// The style and every TileJSON the pack stored, plus its first sprite JSON and first glyph
/// range, are asked for once each, concurrently, with their stored `ETag`/`Last-Modified`. Any
/// 200 with other bytes (or a 404/410: gone upstream) means an update is available; every probe
/// answering 304 or the stored bytes means none. Nothing is stored. Loop thread only.
public final class PackUpdateChecker {
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

    private let loop: EventLoop
    private let fetcher: Fetcher
    private let reader: RevalidationReader
    private let timeouts: FetchRequest.Timeouts
    private let maxBodyBytes: Int

    /// `timeouts` bound each probe (the request waits for all of them, under the API's handler timeout).
    public init(loop: EventLoop, fetcher: Fetcher, databasePath: String,
                timeouts: FetchRequest.Timeouts = .init(connectMilliseconds: 5_000, totalMilliseconds: 20_000),
                maxBodyBytes: Int = DownloadSettings().maxBodyBytes) throws {
        self.loop = loop
        self.fetcher = fetcher
        self.timeouts = timeouts
        self.maxBodyBytes = maxBodyBytes
        reader = try RevalidationReader(path: databasePath)
    }

    public func check(_ packID: Int64, completion: @escaping (Outcome) -> Void) {
        let reader = reader
        loop.runOnThreadPool({ reader.updateProbes(packID: packID) }, then: { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error): completion(.storageFailed("\(error)"))
            case .success(let probes) where probes.isEmpty: completion(.nothingToCompare)
            case .success(let probes): run(probes, completion: completion)
            }
        })
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

    private func probe(_ row: StoredValidators, then: @escaping (Probe) -> Void) {
        guard case .resource(let url, _) = row.key else { return then(.changed) }
        let request = FetchRequest(url: url, ifNoneMatch: row.etag, ifModifiedSince: row.modified,
                                   maxBodyBytes: maxBodyBytes, timeouts: timeouts)
        let reader = reader
        fetcher.submit(request) { [loop] result in
            switch result {
            case .failure(let error):
                then(.failed(url: url, status: nil, detail: error.description))
            case .success(let response):
                switch response.status {
                case 304:
                    then(.unchanged)
                case 200..<300 where response.status != 204:
                    let body = response.body
                    loop.runOnThreadPool({ reader.compare(body, with: row.key) }, then: { comparison in
                        switch comparison {
                        case .same: then(.unchanged)
                        case .changed: then(.changed)
                        case .undecodable: then(.failed(url: url, status: response.status, detail: "the body could not be decoded"))
                        }
                    })
                case 204, 404, 410:
                    then(.changed)
                default:
                    then(.failed(url: url, status: response.status, detail: "the upstream answered HTTP \(response.status)"))
                }
            }
        }
    }
}
