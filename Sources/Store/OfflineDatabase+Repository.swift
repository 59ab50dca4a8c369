import Packs

/// The writer's connection as the store protocols see it: every read `StoreReader` answers (the
/// shared `SQLiteConnection` queries, seeing this transaction's own changes), pack transitions by
/// `PackLifecycle`'s rules, links, imports.
extension OfflineDatabase: SQLiteConnection, MutablePackRepository, MutableResourceIndex, PackImporting, PackVersionRepository {
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
                  try removePack(packID, before: { try enqueueWebhookMessages(WebhookTrigger.types(of: transition), packID: packID) })
            else { return .noSuchPack }
            return .applied(transition)
        }
        return try database.transaction {
            guard let state = try packState(packID) else { return .noSuchPack }
            switch PackLifecycle.transition(from: state, on: event) {
            case .failure(let refusal):
                return .refused(refusal)
            case .success(let transition):
                return .applied(try transition.record(packID, in: Rows(database: self), now: now))
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
        // Complete packs whose content the merge changed get their next version.
        let versions: [PackVersion]
        do {
            versions = try cutVersions(completing: nil, now: clock.now)
        } catch {
            throw .store((error as? DatabaseError)?.storeError ?? StoreError(.other, "\(error)"))
        }
        return ImportOutcome(packs: packs, resources: preview.resources, tiles: preview.tiles,
                             unchangedPacks: preview.unchangedPacks, unchangedRegions: preview.unchangedRegions,
                             createdVersions: versions)
    }
}

extension OfflineDatabase {
    /// This connection's SQL for the rows a transition changes.
    private struct Rows: TransitionRows {
        let database: OfflineDatabase

        func clearFailures(packID: Int64) throws { try database.clearFailures(packID: packID) }
        func restartInvalidation(_ packID: Int64, now: Int64) throws { try database.restartInvalidation(packID, now: now) }
        func storeExpected(_ packID: Int64, _ counts: ExpectedCounts, now: Int64) throws {
            try database.setExpected(packID, resources: counts.resources, tiles: counts.tiles, precise: counts.precise, now: now)
        }
        func removeRows(_ packID: Int64) throws { _ = try database.removePack(packID) }
        func setPackState(_ packID: Int64, state: PackState, error: PackError?, now: Int64) throws {
            try database.setPackState(packID, state: state, error: error, now: now)
        }
        func recordVersion(_ packID: Int64, now: Int64) throws -> [PackVersion] {
            try database.cutVersions(completing: packID, now: now)
        }
        func enqueueWebhooks(_ types: [WebhookEventType], packID: Int64) throws {
            try database.enqueueWebhookMessages(types, packID: packID)
        }
    }
}
