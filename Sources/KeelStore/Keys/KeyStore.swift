public import KeelCore
import KeelCrypto

/// Where a vault's keys live: outside the data directory, per account, readable only while the device is
/// unlocked (MOB-DATA-002).
///
/// Keel ships three: ``FileKeyStore`` (a directory of its own, outside every data directory; Linux and
/// tools), `KeychainKeyStore` (Apple platforms: this-device-only Keychain items) and ``InMemoryKeyStore``
/// (unit tests only). A key store keeps keys and nothing else; which keys a vault uses, and when they are
/// created or shredded, is the vault's business.
///
/// Every requirement is synchronous and may block briefly (a file read, a Keychain query): vaults call
/// them off the cooperative thread pool.
public protocol KeyStore: AnyObject, Sendable {
    /// Whether keys exist but cannot be read now, as on a locked device. Reading throws
    /// ``KeyStoreError`` `locked` while this is true; listing and deleting still work.
    var isLocked: Bool { get }

    /// The key `id`, or nil when the store has no such key.
    ///
    /// - Throws: ``KeyStoreError`` — `locked`, `corrupt`, `wrongKeyLength`, `unavailable` (the store itself
    ///   is gone: never reported as an absent key, or a vault would create a new one over its data).
    func key(_ id: KeyID) throws(KeyStoreError) -> StoredKey?

    /// Stores a new key, durably before returning.
    ///
    /// - Throws: ``KeyStoreError`` `duplicate` when a key with this id exists (a key is never overwritten),
    ///   `locked`, `unavailable`, `ioError`.
    func add(_ key: StoredKey) throws(KeyStoreError)

    /// Deletes the key `id` (nothing to do when it is absent). Works while the store is locked: logging out
    /// of a locked device still shreds.
    func delete(_ id: KeyID) throws(KeyStoreError)

    /// Every key the store holds, with the namespace it belongs to (no key bytes are read).
    func listKeys() throws(KeyStoreError) -> [KeyListing]

    /// This device's identity: a random value kept in the store and created on first use when `create`
    /// is true. A key store that does not travel to a new device (this-device-only Keychain items, a
    /// directory outside backups) gives a restored device a new identity, which is how Keel recognizes
    /// permissions and enrollments bound to the old one. With `create` false, nil when there is none yet.
    func deviceIdentity(create: Bool) throws(KeyStoreError) -> String?
}

/// The identifier of one key: 16 random bytes, written as 32 lowercase hex digits. Not secret.
public struct KeyID: Sendable, Hashable, Comparable, CustomStringConvertible, Codable {
    /// The 32 lowercase hex digits.
    public let rawValue: String

    /// The id written as `rawValue`, or nil unless it is exactly 32 lowercase hex digits.
    public init?(rawValue: String) {
        guard rawValue.utf8.count == 32, rawValue.utf8.allSatisfy(Hex.isLowercaseDigit) else { return nil }
        self.rawValue = rawValue
    }

    init(bytes: [UInt8]) {
        precondition(bytes.count == 16, "KeyID: 16 bytes")
        rawValue = Hex.encode(bytes)
    }

    /// A new id from the system's secure generator.
    static func random() -> KeyID { KeyID(bytes: AESGCM.randomBytes(16)) }

    /// The 16 bytes.
    var bytes: [UInt8] { Hex.decode(rawValue)! }

    /// The hex digits.
    public var description: String { rawValue }

    /// Orders ids by their hex digits.
    public static func < (lhs: KeyID, rhs: KeyID) -> Bool { lhs.rawValue < rhs.rawValue }

    /// Reads an id from its hex string.
    ///
    /// - Throws: `DecodingError.dataCorrupted` unless it is 32 lowercase hex digits.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        guard let id = KeyID(rawValue: try container.decode(String.self)) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "a key id is 32 lowercase hex digits")
        }
        self = id
    }

    /// Writes the hex string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}

/// One key as a ``KeyStore`` keeps it: the key bytes and what ties them to their vault.
public struct StoredKey: Sendable {
    /// The key's id.
    public let id: KeyID
    /// The namespace of the vault the key belongs to (not secret: used to list and shred a vault's keys).
    public let namespace: String
    /// The random marker shared with the vault's data directory. A key whose vault no longer holds the same
    /// marker (the app was uninstalled and its Keychain items survived) belongs to data that is gone.
    public let entanglement: [UInt8]
    let material: KeyMaterial

    /// A key read back from storage.
    ///
    /// - Throws: ``KeyStoreError`` `wrongKeyLength` unless `keyBytes` is 32 bytes (AES-256);
    ///   `invalidNamespace` unless `namespace` is 1…64 characters of `a-z`, `0-9`, `-`, `_`.
    public init(id: KeyID, namespace: String, entanglement: [UInt8], keyBytes: [UInt8]) throws(KeyStoreError) {
        guard keyBytes.count == AESGCM.keyLength else {
            throw KeyStoreError(
                code: .wrongKeyLength, keyID: id,
                message: "key \(id) is \(keyBytes.count) bytes long; AES-256 keys are \(AESGCM.keyLength)")
        }
        try Self.validate(namespace: namespace)
        self.init(id: id, namespace: namespace, entanglement: entanglement, material: KeyMaterial(keyBytes))
    }

    init(id: KeyID, namespace: String, entanglement: [UInt8], material: KeyMaterial) {
        self.id = id
        self.namespace = namespace
        self.entanglement = entanglement
        self.material = material
    }

    /// Calls `body` with the 32 key bytes, for a key store that must write them. Do not copy them anywhere
    /// else.
    public func withKeyBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(material.bytes))
    }

    static func validate(namespace: String) throws(KeyStoreError) {
        guard (1...64).contains(namespace.utf8.count),
            namespace.utf8.allSatisfy({
                Hex.isLowercaseDigit($0) || (0x67...0x7A).contains($0) || $0 == 0x2D || $0 == 0x5F
            })
        else {
            throw KeyStoreError(
                code: .invalidNamespace, keyID: nil,
                message: "a key namespace is 1…64 characters of a-z, 0-9, - and _")
        }
    }
}

/// A key's id and namespace, as ``KeyStore/listKeys()`` reports them.
public struct KeyListing: Sendable, Hashable {
    /// The key's id.
    public let id: KeyID
    /// The namespace of the vault it belongs to.
    public let namespace: String

    /// A listing of key `id` in `namespace`.
    public init(id: KeyID, namespace: String) {
        self.id = id
        self.namespace = namespace
    }
}

/// Why a key store could not do what was asked.
public struct KeyStoreError: KeelError, Equatable {
    /// Codes of ``KeyStoreError``.
    public typealias Code = ErrorCode<KeyStoreError>

    /// What went wrong.
    public let code: Code
    /// The key concerned, when there is one.
    public let keyID: KeyID?
    /// A short explanation for developers (paths, never key bytes).
    public let message: String

    /// An error of kind `code`.
    public init(code: Code, keyID: KeyID?, message: String) {
        self.code = code
        self.keyID = keyID
        self.message = message
    }

    /// A developer-facing explanation: `key store locked: ...`.
    public var description: String { "key store \(code): \(message)" }
}

extension ErrorCode where Domain == KeyStoreError {
    /// Keys exist but cannot be read now (a locked device).
    public static var locked: Self { Self("locked") }
    /// A stored key is damaged (bad format, checksum mismatch): it is left where it is.
    public static var corrupt: Self { Self("corrupt") }
    /// A stored key is not 32 bytes long.
    public static var wrongKeyLength: Self { Self("wrongKeyLength") }
    /// The store itself is gone or unusable (its directory deleted or replaced, the Keychain failing).
    public static var unavailable: Self { Self("unavailable") }
    /// The key directory is inside a data directory, or a data directory inside it: keys never sit next
    /// to the data they protect.
    public static var insideDataDirectory: Self { Self("insideDataDirectory") }
    /// A key with this id exists already.
    public static var duplicate: Self { Self("duplicate") }
    /// A namespace that is not 1…64 characters of `a-z`, `0-9`, `-`, `_`.
    public static var invalidNamespace: Self { Self("invalidNamespace") }
    /// Reading or writing the store failed.
    public static var ioError: Self { Self("ioError") }
}
