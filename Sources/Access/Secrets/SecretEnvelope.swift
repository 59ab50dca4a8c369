import Cryptography

/// A secret sealed for storage (webhook signing secrets, tenant link secrets, upstream
/// credentials, manifest signing keys): AES-256-GCM under the keyring's current key, as text
///
///     v1:<key id>:<nonce>:<ciphertext and tag>
///
/// — the nonce (12 bytes) and the ciphertext with its 16-byte tag appended, both unpadded
/// base64url. The associated data, authenticated but not stored, is
/// `packd-secret-v1:<key id>:<context>`, where the context names the value's place (for
/// instance `webhook:17:secret`): a sealed value copied into another row, or another tenant's,
/// does not open there. A copy of the database without the key file holds nothing usable.
public enum SecretEnvelope {
    public static let version = "v1"

    /// Why a stored value does not open; never shows the value or a key.
    public enum OpenError: Error, Equatable, Sendable, CustomStringConvertible {
        case malformed(String)
        /// Sealed under a key the keyring does not hold (the key file lacks it).
        case unknownKey(String)
        /// The key id matches but the value does not authenticate: altered, or moved to another context.
        case authenticationFailed(keyID: String)

        public var description: String {
            switch self {
            case .malformed(let reason): "not a sealed secret: \(reason)"
            case .unknownKey(let id): "the secret was sealed under key \(id), which the secrets key file does not hold"
            case .authenticationFailed(let id): "the secret sealed under key \(id) does not authenticate (altered, or not this value's place)"
            }
        }
    }

    /// `plaintext` sealed under the keyring's current key for `context`.
    public static func seal(_ plaintext: [UInt8], context: String, keyring: SecretsKeyring) throws(CryptographyError) -> String {
        let key = keyring.current
        let box = try AES256GCM.seal(plaintext, using: key.key, associatedData: associatedData(keyID: key.id, context: context))
        return [version, key.id, Base64URL.encode(box.nonce), Base64URL.encode(box.ciphertext + box.tag)].joined(separator: ":")
    }

    /// The plaintext of `text`, sealed for `context` under one of the keyring's keys.
    public static func open(_ text: String, context: String, keyring: SecretsKeyring) throws(OpenError) -> [UInt8] {
        let (keyID, box) = try parse(text)
        guard let key = keyring.key(id: keyID) else { throw .unknownKey(keyID) }
        do {
            return try AES256GCM.open(box, using: key.key, associatedData: associatedData(keyID: keyID, context: context))
        } catch {
            throw .authenticationFailed(keyID: keyID)
        }
    }

    /// `text` sealed again under the current key (`packd secrets rotate`), or nil when it already is.
    public static func resealed(_ text: String, context: String, keyring: SecretsKeyring) throws(OpenError) -> String? {
        guard try keyID(of: text) != keyring.current.id else { return nil }
        let plaintext = try open(text, context: context, keyring: keyring)
        do {
            return try seal(plaintext, context: context, keyring: keyring)
        } catch {
            throw .malformed("sealing again failed: \(error)")
        }
    }

    /// The id of the key that sealed `text`.
    public static func keyID(of text: String) throws(OpenError) -> String {
        try parse(text).keyID
    }

    /// Whether `text` has the form of a sealed value (packd refuses to start without a key file
    /// once one is stored).
    public static func isSealed(_ text: String) -> Bool {
        (try? parse(text)) != nil
    }

    private static func associatedData(keyID: String, context: String) -> [UInt8] {
        Array("packd-secret-\(version):\(keyID):\(context)".utf8)
    }

    private static func parse(_ text: String) throws(OpenError) -> (keyID: String, box: AES256GCM.SealedBox) {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 4 else { throw .malformed("expected v1:<key id>:<nonce>:<ciphertext>") }
        guard parts[0] == version else { throw .malformed("unknown version '\(parts[0].prefix(8))'") }
        let keyID = String(parts[1])
        guard keyID.utf8.count == 8, Base64URL.decode(keyID) != nil else { throw .malformed("the key id is not 8 base64url characters") }
        guard let nonce = Base64URL.decode(parts[2]), nonce.count == AES256GCM.nonceByteCount else {
            throw .malformed("the nonce is not 12 bytes of base64url")
        }
        guard let sealed = Base64URL.decode(parts[3]), sealed.count >= AES256GCM.tagByteCount else {
            throw .malformed("the ciphertext is not base64url with a 16-byte tag")
        }
        do {
            let box = try AES256GCM.SealedBox(nonce: nonce, ciphertext: Array(sealed.dropLast(AES256GCM.tagByteCount)),
                                              tag: Array(sealed.suffix(AES256GCM.tagByteCount)))
            return (keyID, box)
        } catch {
            throw .malformed("\(error)")
        }
    }
}
