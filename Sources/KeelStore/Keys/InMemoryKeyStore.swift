import KeelCore
import KeelCrypto

/// Keys in memory, for unit tests only: nothing survives the process, so an app that used it would lose
/// every sealed record on relaunch. ``lock()`` models a locked device.
public final class InMemoryKeyStore: KeyStore {
    private struct State {
        var keys: [KeyID: StoredKey] = [:]
        var isLocked = false
        var deviceIdentity: String?
    }

    private let state = Locked(State())

    /// An empty store.
    public init() {}

    /// Reads throw `locked` until ``unlock()``.
    public func lock() { state.withLock { $0.isLocked = true } }

    /// Ends ``lock()``.
    public func unlock() { state.withLock { $0.isLocked = false } }

    /// Whether reads are refused now (see ``KeyStore/isLocked``).
    public var isLocked: Bool { state.withLock { $0.isLocked } }

    /// The key `id`, or nil when absent (see ``KeyStore/key(_:)``).
    public func key(_ id: KeyID) throws(KeyStoreError) -> StoredKey? {
        try state.withLock { state throws(KeyStoreError) -> StoredKey? in
            guard let key = state.keys[id] else { return nil }
            guard !state.isLocked else {
                throw KeyStoreError(code: .locked, keyID: id, message: "the device is locked; key \(id) cannot be read")
            }
            return key
        }
    }

    /// Stores a new key durably; never overwrites one (see ``KeyStore/add(_:)``).
    public func add(_ key: StoredKey) throws(KeyStoreError) {
        try state.withLock { state throws(KeyStoreError) in
            guard !state.isLocked else {
                throw KeyStoreError(code: .locked, keyID: key.id, message: "the device is locked; no key can be added")
            }
            guard state.keys[key.id] == nil else {
                throw KeyStoreError(code: .duplicate, keyID: key.id, message: "key \(key.id) exists already")
            }
            state.keys[key.id] = key
        }
    }

    /// Deletes the key `id`, also while locked (see ``KeyStore/delete(_:)``).
    public func delete(_ id: KeyID) throws(KeyStoreError) { _ = state.withLock { $0.keys.removeValue(forKey: id) } }

    /// Every key's id and namespace, without reading key bytes (see ``KeyStore/listKeys()``).
    public func listKeys() throws(KeyStoreError) -> [KeyListing] {
        state.withLock { $0.keys.values.map { KeyListing(id: $0.id, namespace: $0.namespace) } }
            .sorted { ($0.namespace, $0.id) < ($1.namespace, $1.id) }
    }

    /// This device's identity in this store (see ``KeyStore/deviceIdentity(create:)``).
    public func deviceIdentity(create: Bool) throws(KeyStoreError) -> String? {
        state.withLock { state in
            if state.deviceIdentity == nil, create { state.deviceIdentity = Hex.encode(AESGCM.randomBytes(16)) }
            return state.deviceIdentity
        }
    }
}
