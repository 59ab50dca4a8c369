import Cryptography

/// Tokens verified before, by the SHA-256 of their text, until they stop being accepted — so a
/// client sending the same token on every request pays one digest and one lookup, not a
/// signature check. Keyed by a digest, never the token: memory holds no credential, and equal
/// digests mean equal tokens (SHA-256 collisions being out of reach). Bounded: when full, the
/// oldest entries go first (insertion order), expired ones whenever met.
///
/// A value owned by one thread (the loop's).
struct VerifiedTokenCache {
    let capacity: Int
    private var entries: [Digest: VerifiedToken] = [:]
    /// Insertion order, for eviction; may hold digests already gone.
    private var order: [Digest] = []
    private var head = 0

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    var count: Int { entries.count }

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
        guard let token = entries[digest] else { return nil }
        guard now < token.acceptedUntil else {
            entries[digest] = nil
            return nil
        }
        return token
    }

    mutating func insert(_ token: VerifiedToken, for digest: Digest) {
        if entries.updateValue(token, forKey: digest) == nil {
            order.append(digest)
        }
        while entries.count > capacity, head < order.count {
            entries[order[head]] = nil
            head += 1
        }
        // Compact the order list once its dead front outgrows the live part.
        if head > capacity {
            order.removeFirst(head)
            head = 0
        }
    }

    /// Forgets the tokens verified with keys no longer in `kids` (the issuer dropped them).
    mutating func keepOnly(kids: Set<String>) {
        entries = entries.filter { kids.contains($0.value.kid) }
    }
}
