import Cryptography

/// Tokens verified before, by the SHA-256 of their text, until they stop being accepted — so a
/// client sending the same token on every request pays one digest and one lookup, not a
/// signature check. Keyed by a digest, never the token: memory holds no credential, and equal
/// digests mean equal tokens (SHA-256 collisions being out of reach). Bounded: past `capacity`
/// the oldest entries go first (insertion order), expired ones whenever met; the insertion order
/// is compacted as it goes, so memory stays within a few times `capacity` however tokens churn.
///
/// A value owned by one thread (the loop's).
struct VerifiedTokenCache {
    let capacity: Int
    private var entries: [Digest: (token: VerifiedToken, serial: UInt64)] = [:]
    /// Insertion order, for eviction; positions whose entry has gone (or was inserted again
    /// since, with a newer serial) are skipped and compacted away.
    private var order: [(digest: Digest, serial: UInt64)] = []
    private var head = 0
    private var serial: UInt64 = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { entries.count }
    /// Insertion-order positions held (live and dead): what the compaction bounds.
    var positions: Int { order.count - head }

    /// 32 bytes as four words: hashes and compares faster than an array.
    struct Digest: Hashable {
        let a: UInt64, b: UInt64, c: UInt64, d: UInt64

        init(of token: some StringProtocol) {
            let bytes = SHA256.hash(token.utf8)
            func word(_ offset: Int) -> UInt64 {
                bytes[offset..<offset + 8].reduce(0) { $0 << 8 | UInt64($1) }
            }
            a = word(0)
            b = word(8)
            c = word(16)
            d = word(24)
        }
    }

    /// The verified token for `digest`, if it is still accepted at `now`.
    mutating func lookup(_ digest: Digest, now: Int64) -> VerifiedToken? {
        guard let entry = entries[digest] else { return nil }
        guard now < entry.token.acceptedUntil else {
            entries[digest] = nil
            return nil
        }
        return entry.token
    }

    mutating func insert(_ token: VerifiedToken, for digest: Digest) {
        serial += 1
        entries[digest] = (token, serial)
        order.append((digest, serial))
        while entries.count > capacity, head < order.count {
            let oldest = order[head]
            head += 1
            if entries[oldest.digest]?.serial == oldest.serial { entries[oldest.digest] = nil }
        }
        // At most once per `capacity` insertions: amortised constant time.
        if positions > 2 * capacity || head > capacity {
            order = order[head...].filter { entries[$0.digest]?.serial == $0.serial }
            head = 0
        }
    }

    /// Forgets the tokens verified with keys no longer in `kids` (the issuer dropped them).
    mutating func keepOnly(kids: Set<String>) {
        entries = entries.filter { kids.contains($0.value.token.kid) }
    }
}
