import Packs

/// The writer's connection as the store protocols see it: every read `StoreReader` answers (the
/// shared `SQLiteConnection` queries, seeing this transaction's own changes), pack transitions by
/// `PackLifecycle`'s rules, links, imports.
extension OfflineDatabase: SQLiteConnection, MutablePackRepository, MutableResourceIndex, PackImporting {
    public func resource(_ key: ResourceKey, linkedTo packID: Int64?) throws -> StoredResource? {
        try storedRow(key, linkedTo: packID)
    }

    /// The maintained figures (no scan).
    public func ambientCache() throws -> (size: Int64, maximumSize: Int64) {
        (max(0, ambientCacheSize), maximumAmbientCacheSize)
    }

    public func tileLimit() throws -> Int64? { linkedTileLimit }

    /// Reads the state, asks the lifecycle, and applies the answer in one transaction. A delete
    /// removes the rows as MapLibre's `deleteRegion` does (and vacuums freed pages after).
    public func transition(_ packID: Int64, _ event: PackLifecycle.Event, now: Int64) throws -> TransitionOutcome {
        if case .delete = event {
            guard let state = try packState(packID) else { return .noSuchPack }
            guard case .success(let transition) = PackLifecycle.transition(from: state, on: event),
                  try removePack(packID) else { return .noSuchPack }
            return .applied(transition)
        }
        return try database.transaction {
            guard let state = try packState(packID) else { return .noSuchPack }
            switch PackLifecycle.transition(from: state, on: event) {
            case .failure(let refusal):
                return .refused(refusal)
            case .success(let transition):
                for action in transition.storageActions {
                    switch action {
                    case .clearFailures: try clearFailures(packID: packID)
                    case .restartRevalidation: try restartInvalidation(packID, now: now)
                    case .storeExpected(let counts):
                        try setExpected(packID, resources: counts.resources, tiles: counts.tiles, precise: counts.precise,
                                        now: now)
                    case .removeRows: _ = try removePack(packID)
                    default: break
                    }
                }
                if let next = transition.to, transition.changesState {
                    try setPackState(packID, state: next, error: transition.error, now: now)
                }
                return .applied(transition)
            }
        }
    }

    public func storeInAmbientCache(_ write: ResourceWrite, now: Int64) throws -> Bool {
        guard case .resource(let url, _) = write.key else { return false }
        if maximumAmbientCacheSize == 0, try !isResourceLinkedToAnyPack(url: url) { return false }
        let outcome = apply([write], now: now)
        if let error = outcome.error { throw error }
        return true
    }

    /// Counts what the merge will change, then merges, on this one connection (nothing commits
    /// in between).
    public func importUpload(_ upload: any CheckedUpload) throws(ImportError) -> ImportOutcome {
        guard let upload = upload as? ValidatedImport else {
            throw .file("the upload was not checked by this store")
        }
        let preview = try ImportPreview.of(upload, in: database)
        let packs = try importOfflineDatabase(upload)
        return ImportOutcome(packs: packs, resources: preview.resources, tiles: preview.tiles,
                             unchangedPacks: preview.unchangedPacks, unchangedRegions: preview.unchangedRegions)
    }
}
