#if canImport(Security)
    public import Foundation
    import KeelCore
    import KeelCrypto
    import Security

    /// Keys as Keychain items (Apple platforms): generic passwords readable after the first unlock, on
    /// this device only, never synchronized to iCloud Keychain and never in a backup that restores onto
    /// another device (`kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly`, `kSecAttrSynchronizable` false).
    ///
    /// A thin adapter: the logic that decides when keys are created, trusted or shredded is in the vault
    /// and tested on every platform with ``FileKeyStore``. Keychain items can outlive an uninstall; vaults
    /// treat such a key as absent (its entanglement marker is gone with the data directory) and delete it.
    public final class KeychainKeyStore: KeyStore {
        /// The `kSecAttrService` of every key item.
        public let service: String
        /// The access group, when keys are shared with an app extension.
        public let accessGroup: String?
        private let sawLocked = Locked(false)

        /// A key store of items under `service` (and `accessGroup`, when given).
        public init(service: String = "keel.vault.keys", accessGroup: String? = nil) {
            self.service = service
            self.accessGroup = accessGroup
        }

        /// Whether the last read found the device locked (the Keychain does not say so in advance).
        public var isLocked: Bool { sawLocked.withLock { $0 } }

        private func query(_ account: String?) -> [String: Any] {
            var query: [String: Any] = [
                kSecClass as String: kSecClassGenericPassword,
                kSecAttrService as String: service,
                kSecAttrSynchronizable as String: kCFBooleanFalse as Any,
            ]
            if let account { query[kSecAttrAccount as String] = account }
            if let accessGroup { query[kSecAttrAccessGroup as String] = accessGroup }
            return query
        }

        private func failure(_ status: OSStatus, _ id: KeyID?, _ action: String) -> KeyStoreError {
            if status == errSecInteractionNotAllowed {
                sawLocked.withLock { $0 = true }
                return KeyStoreError(code: .locked, keyID: id, message: "the device is locked; cannot \(action)")
            }
            let text = SecCopyErrorMessageString(status, nil) as String? ?? "OSStatus \(status)"
            return KeyStoreError(code: .unavailable, keyID: id, message: "Keychain cannot \(action): \(text)")
        }

        /// The key `id`, or nil when absent (see ``KeyStore/key(_:)``).
        public func key(_ id: KeyID) throws(KeyStoreError) -> StoredKey? {
            var query = query(id.rawValue)
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return nil }
            guard status == errSecSuccess, let data = result as? Data else {
                throw failure(status, id, "read key \(id)")
            }
            sawLocked.withLock { $0 = false }
            var bytes = [UInt8](data)
            defer { wipe(&bytes) }
            return try KeyBlob.decode(bytes, expecting: id)
        }

        /// Stores a new key durably; never overwrites one (see ``KeyStore/add(_:)``).
        public func add(_ key: StoredKey) throws(KeyStoreError) {
            var blob = KeyBlob.encode(key)
            defer { wipe(&blob) }
            var item = query(key.id.rawValue)
            item[kSecAttrLabel as String] = key.namespace
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            item[kSecValueData as String] = Data(blob)
            let status = SecItemAdd(item as CFDictionary, nil)
            if status == errSecDuplicateItem {
                throw KeyStoreError(code: .duplicate, keyID: key.id, message: "key \(key.id) exists already")
            }
            guard status == errSecSuccess else { throw failure(status, key.id, "add key \(key.id)") }
        }

        /// Deletes the key `id`, also while locked (see ``KeyStore/delete(_:)``).
        public func delete(_ id: KeyID) throws(KeyStoreError) {
            let status = SecItemDelete(query(id.rawValue) as CFDictionary)
            guard status == errSecSuccess || status == errSecItemNotFound else {
                throw failure(status, id, "delete key \(id)")
            }
        }

        /// Every key's id and namespace, without reading key bytes (see ``KeyStore/listKeys()``).
        public func listKeys() throws(KeyStoreError) -> [KeyListing] {
            var query = query(nil)
            query[kSecReturnAttributes as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitAll
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecItemNotFound { return [] }
            guard status == errSecSuccess, let items = result as? [[String: Any]] else {
                throw failure(status, nil, "list keys")
            }
            return items.compactMap { item in
                guard let account = item[kSecAttrAccount as String] as? String, let id = KeyID(rawValue: account),
                    let namespace = item[kSecAttrLabel as String] as? String
                else { return nil }
                return KeyListing(id: id, namespace: namespace)
            }
            .sorted { ($0.namespace, $0.id) < ($1.namespace, $1.id) }
        }

        /// This device's identity in this store (see ``KeyStore/deviceIdentity(create:)``).
        public func deviceIdentity(create: Bool) throws(KeyStoreError) -> String? {
            var query = query("device-identity")
            query[kSecReturnData as String] = true
            query[kSecMatchLimit as String] = kSecMatchLimitOne
            var result: CFTypeRef?
            let status = SecItemCopyMatching(query as CFDictionary, &result)
            if status == errSecSuccess, let data = result as? Data {
                return String(decoding: data, as: UTF8.self)
            }
            guard status == errSecItemNotFound else { throw failure(status, nil, "read the device identity") }
            guard create else { return nil }
            let identity = Hex.encode(AESGCM.randomBytes(16))
            var item = self.query("device-identity")
            item[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
            item[kSecValueData as String] = Data(identity.utf8)
            let added = SecItemAdd(item as CFDictionary, nil)
            guard added == errSecSuccess else { throw failure(added, nil, "store the device identity") }
            return identity
        }
    }
#endif
