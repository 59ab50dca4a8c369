import Fetch
import Geo
import Packs
import Plan

/// A download's PMTiles pyramids: their tiles read from the archives its documents opened, and a
/// restart from the new header when an archive is replaced while it is read.
extension PackDownload {
    /// The range reads of this run, counted into the pack's `archive_requests`/`archive_bytes`.
    func archiveRanges() -> ResolverRanges {
        let ranges = ResolverRanges(resolver: resolver, settings: settings, owner: transferOwner)
        ranges.onAnswer = { [weak self] bytes in
            self?.archiveTraffic.requests += 1
            self?.archiveTraffic.bytes += Int64(bytes)
        }
        return ranges
    }

    /// Sets up reading the tiles of every pyramid whose template is an opened archive's; its
    /// TileJSON is stored from hand. The version each archive pyramid's stored tiles must have.
    func readArchives(_ pyramids: [TilePyramid], opened: [String: OpenedArchive],
                      ranges: ResolverRanges) throws(ArchiveFailure) -> [Int: TileVersion] {
        var versions: [Int: TileVersion] = [:]
        for (index, pyramid) in pyramids.enumerated() {
            guard let key = PMTilesSourceURL.key(ofTemplate: pyramid.template.template) else { continue }
            guard let archive = opened[key] else {
                throw .unavailable(url: PMTilesSourceURL.archiveURL(ofKey: key) ?? key, status: nil,
                                   detail: "the archive's TileJSON is known but the archive was not opened")
            }
            let fetch = archiveFetch ?? makeArchiveFetch(ranges)
            fetch.addArchive(archive, slot: index)
            versions[index] = archive.validator.tileVersion
            var headers = archive.headers.filter { ["etag", "last-modified", "cache-control", "expires"].contains($0.key) }
            headers["content-type"] = "application/json"
            documents[key] = FetchResponse(status: 200, headers: ResponseHeaders(headers), body: archive.tileJSON, url: key)
        }
        return versions
    }

    private func makeArchiveFetch(_ ranges: ResolverRanges) -> ArchiveTileFetch {
        let fetch = ArchiveTileFetch(loop: loop, source: ranges, limits: settings.archive)
        fetch.onOutcome = { [weak self] outcome in self?.archiveOutcome(outcome) }
        fetch.onRequestEnded = { [weak self] in
            guard let self, !ended else { return }
            flushArchiveTraffic()
            resolved()
        }
        fetch.onReady = { [weak self] in self?.pump() }
        fetch.onFatal = { [weak self] failure in self?.end(.fail(failure.packError)) }
        fetch.onReplaced = { [weak self] slot, detail in self?.archiveReplaced(slot, detail) }
        archiveFetch = fetch
        return fetch
    }

    private func archiveOutcome(_ outcome: ArchiveTileFetch.Outcome) {
        guard !ended else { return }
        // A start area's tiles are reported to its watch as they resolve, as fetched ones are.
        switch outcome {
        case .tile(let slot, let tile, let bytes, let headers, let inStartArea):
            busy += 1
            let resource = pyramids[slot].resource(for: tile)
            store(resource, FetchResponse(status: 200, headers: ResponseHeaders(), body: bytes, url: resource.url),
                  cache: archiveCache(headers), inStartArea: inStartArea && startAreaWatch != nil)
        case .missing(let slot, let tile, let headers, let inStartArea):
            // Not in the archive: no content, as a tile server's 404 (MapLibre's PMTiles sources do the same).
            writes.storeNoContent(pyramids[slot].resource(for: tile), cache: archiveCache(headers))
            listener?.resourceDownloaded()
            if inStartArea { startAreaWatch?.tileResolved(stored: true) }
        case .failed(let slot, let tiles, let status, let message, let inStartArea):
            for tile in tiles where !ended {
                busy += 1
                if inStartArea { startAreaWatch?.tileResolved(stored: false) }
                recordFailure(pyramids[slot].resource(for: tile), status: status, message: message, attempts: settings.maxAttempts)
            }
        }
    }

    /// The archive changed under the download: everything of this run stops, what it handed the
    /// writer is submitted, and the download starts again from the documents. Tiles stored from
    /// the old archive no longer count as stored (their validators are the old ones) and are
    /// read again from the new one. A cluster unit restarts the same way: the versions it agreed
    /// on are the ones it saw replaced, so it may move the cluster's record from them to the new
    /// header (`agreeOnArchives`), and the units done with them are redone.
    func archiveReplaced(_ slot: Int, _ detail: String) {
        guard !ended, !restarting else { return }
        let url = pyramids.indices.contains(slot)
            ? PMTilesSourceURL.key(ofTemplate: pyramids[slot].template.template).flatMap(PMTilesSourceURL.archiveURL(ofKey:)) : nil
        restarts += 1
        guard restarts <= settings.archive.maxRestarts else {
            return end(.fail(ArchiveFailure.unstable(url: url ?? "", detail: "the archive changed \(restarts) times during the "
                                                     + "download: \(detail)").packError))
        }
        replacedArchives = agreedArchives
        restart()
    }

    /// A cluster unit's archives, agreed on by every node before anything is stored: the pack's
    /// record holds one version per archive. Another version recorded means this run's or the
    /// record's is stale: the run opens the archives again, and what it reads then may replace
    /// the record's (it saw that version, so it is no newer than what the server serves now).
    /// A node whose reads meet a replaced archive restarts anyway, so the record converges on
    /// what the server serves.
    func agreeOnArchives(_ archives: [String: OpenedArchive], then: @escaping () -> Void) {
        let identities = archives.mapValues(\.validator.identity)
        agreeing = true
        guard let owner else { return }
        owner.jobOpenedArchives(packID, identities, replacing: replacedArchives) { [weak self] recorded in
            guard let self, !ended else { return }
            agreeing = false
            guard let recorded else {
                agreedArchives = identities
                replacedArchives = [:]
                return then()
            }
            disagreements += 1
            guard disagreements <= Self.maximumDisagreements else {
                return end(.fail(PackError(.sourceUnavailable, "the cluster's nodes read \(disagreements) different versions of "
                                           + "the archive; resume reads it again")))
            }
            replacedArchives = recorded
            restart()
        }
    }

    /// Opening the archives again after a disagreement, at most this often per unit.
    static let maximumDisagreements = 8

    /// Stops everything of this run; once what it handed the writer is submitted, runs again
    /// from the documents.
    private func restart() {
        restarting = true
        downloading = false
        documentPhase?.stop()
        documentPhase = nil
        archiveFetch?.stop()
        archiveFetch = nil
        lookup?.stop()
        lookup = nil
        resolver.stop()
        fetcher.cancelAll(owner: transferOwner)
        flushArchiveTraffic()
        let previous = writes
        previous.stop()
        // Every row of the old run reaches the writer before any row of the new one.
        previous.whenIdle { [weak self] in
            guard let self, !ended else { return }
            resolver = UpstreamResolver(loop: loop, fetcher: fetcher, settings: settings, policy: .download(settings),
                                        packID: packID, clock: clock, listener: listener)
            writes = WriteQueue(packID: packID, loop: loop, sink: store, settings: settings, clock: clock)
            connectRun()
            pending = PendingResources()
            archiveBeyondStartArea.removeAll()
            documents = [:]
            busy = 0
            failures = nil
            // The start area is walked again: what the old run queued of it will never resolve.
            if startAreaWatch != nil { startAreaWatch = StartAreaWatch() }
            restarting = false
            run()
        }
    }

    /// The cache columns of an archive answer's tiles, parsed once for all the tiles it brought.
    private func archiveCache(_ headers: [String: String]) -> HTTPCacheHeaders {
        if let last = lastArchiveCache, last.headers == headers { return last.cache }
        let cache = ResponseHeaders(headers).cacheHeaders(now: clock.now)
        lastArchiveCache = (headers, cache)
        return cache
    }

    /// Adds the archive requests and bytes counted so far to the pack's, in the writer's open batch.
    func flushArchiveTraffic() {
        guard archiveTraffic.requests > 0 || archiveTraffic.bytes > 0 else { return }
        let (packID, requests, bytes) = (packID, archiveTraffic.requests, archiveTraffic.bytes)
        archiveTraffic = (0, 0)
        store.inBatch({ database in try database.addArchiveTraffic(packID: packID, requests: requests, bytes: bytes) }, then: nil)
    }

    /// Tiles to fetch: an archive's to its `ArchiveTileFetch` (a band's tiles are all in the start
    /// area or none; those beyond it wait until it is settled), the others to fetch one URL each.
    func queue(_ tiles: [PendingResources.Entry]) {
        guard let archiveFetch else { return pending.append(contentsOf: tiles) }
        var archived: [Int: [TileID]] = [:]
        var inStartArea = false
        for entry in tiles {
            if case .tile(let pyramid, let tile, let near) = entry, archiveFetch.hasArchive(slot: pyramid) {
                archived[pyramid, default: []].append(tile)
                inStartArea = inStartArea || near
            } else {
                pending.append(entry)
            }
        }
        for (slot, tiles) in archived.sorted(by: { $0.key < $1.key }) {
            if startAreaWatch != nil, !inStartArea {
                archiveBeyondStartArea.append((slot, tiles))
            } else {
                archiveFetch.add(tiles, slot: slot, inStartArea: inStartArea)
            }
        }
        if startAreaWatch == nil || startAreaWatch?.isSettled == true && !startAreaRecording { releaseArchiveTiles() }
    }

    /// The start area is settled: the archive tiles beyond it are read from now on.
    func releaseArchiveTiles() {
        guard let archiveFetch, !archiveBeyondStartArea.isEmpty else { return }
        for (slot, tiles) in archiveBeyondStartArea { archiveFetch.add(tiles, slot: slot) }
        archiveBeyondStartArea.removeAll()
    }
}
