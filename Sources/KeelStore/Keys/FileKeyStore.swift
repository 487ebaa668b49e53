public import Foundation
import KeelCore
import KeelCrypto

/// Keys in a directory of their own (Linux, servers, tools): one `0600` file per key in a `0700`
/// directory that may not be inside any data directory, nor contain one — resolved through symlinks
/// (MOB-DATA-002: the key is never stored next to the data).
///
/// Writes are atomic and durable (a temporary file, `fsync`, a link into place, `fsync` of the
/// directory); an existing key is never overwritten. Damaged files are reported (`corrupt`,
/// `wrongKeyLength`) and left alone. A directory deleted or replaced while the app runs is `unavailable`
/// for every call, never an empty store: a vault would otherwise create a new key over existing data.
///
/// ``lock()`` and ``unlock()`` model a locked device: keys stay on disk, reading them throws `locked`.
public final class FileKeyStore: KeyStore {
    /// The key directory, as given.
    public let directory: URL
    private let path: String
    private let locked = Locked(false)
    private let deviceIdentityLock = Locked(())

    /// A key store in `directory`, created (with `0700`) when `create` is true and it does not exist.
    ///
    /// - Parameter dataDirectories: every directory the app keeps data in. The key directory may be
    ///   neither inside one of them nor around one, after resolving symlinks.
    /// - Throws: ``KeyStoreError`` `insideDataDirectory`; `unavailable` when the directory is missing
    ///   (and `create` is false) or is not a directory; `ioError` when it cannot be created.
    public init(directory: URL, dataDirectories: [URL], create: Bool = true) throws(KeyStoreError) {
        self.directory = directory
        path = directory.path
        for data in dataDirectories {
            if DurableFiles.isSameOrInside(path, data.path) || DurableFiles.isSameOrInside(data.path, path) {
                throw KeyStoreError(
                    code: .insideDataDirectory, keyID: nil,
                    message:
                        "key directory \(DurableFiles.resolved(path)) and data directory \(DurableFiles.resolved(data.path)) overlap; keys never sit next to the data"
                )
            }
        }
        switch DurableFiles.kind(path) {
        case .directory: break
        case nil where create:
            do { try DurableFiles.makeDirectory(path, mode: 0o700) } catch {
                throw KeyStoreError(code: .ioError, keyID: nil, message: error.description)
            }
        case nil:
            throw KeyStoreError(code: .unavailable, keyID: nil, message: "key directory \(path) does not exist")
        case .symlink where DurableFiles.kind(DurableFiles.resolved(path)) == .directory: break
        default:
            throw KeyStoreError(code: .unavailable, keyID: nil, message: "\(path) is not a directory")
        }
        if create, let mode = DurableFiles.mode(DurableFiles.resolved(path)), mode & 0o077 != 0 {
            // Tighten a directory that others could read; never loosen anything.
            _ = try? DurableFiles.makeDirectory(DurableFiles.resolved(path), mode: 0o700)
        }
    }

    /// Models a locked device: reads throw `locked` until ``unlock()``.
    public func lock() { locked.withLock { $0 = true } }

    /// Ends ``lock()``.
    public func unlock() { locked.withLock { $0 = false } }

    /// Whether ``lock()`` is in effect.
    public var isLocked: Bool { locked.withLock { $0 } }

    /// The key `id`, or nil when absent (see ``KeyStore/key(_:)``).
    public func key(_ id: KeyID) throws(KeyStoreError) -> StoredKey? {
        guard let file = try fileName(of: id) else { return nil }
        guard !isLocked else {
            throw KeyStoreError(code: .locked, keyID: id, message: "the device is locked; key \(id) cannot be read")
        }
        let bytes: [UInt8]
        do { bytes = try DurableFiles.read(path + "/" + file, limit: 4096) } catch {
            if error.isNotFound { return nil }
            throw KeyStoreError(code: error.errno == 27 ? .corrupt : .ioError, keyID: id, message: error.description)
        }
        let key = try KeyBlob.decode(bytes, expecting: id)
        guard file == Self.fileName(namespace: key.namespace, id: id) else {
            throw KeyStoreError(
                code: .corrupt, keyID: id, message: "key file \(file) holds a key of namespace \(key.namespace)")
        }
        return key
    }

    /// Stores a new key durably; never overwrites one (see ``KeyStore/add(_:)``).
    public func add(_ key: StoredKey) throws(KeyStoreError) {
        try requireDirectory()
        guard !isLocked else {
            throw KeyStoreError(code: .locked, keyID: key.id, message: "the device is locked; no key can be added")
        }
        if try fileName(of: key.id) != nil {
            throw KeyStoreError(code: .duplicate, keyID: key.id, message: "key \(key.id) exists already")
        }
        var blob = KeyBlob.encode(key)
        defer { wipe(&blob) }
        do {
            try DurableFiles.write(
                blob, to: path + "/" + Self.fileName(namespace: key.namespace, id: key.id), mode: 0o600,
                exclusive: true)
        } catch {
            throw KeyStoreError(
                code: error.errno == 17 ? .duplicate : .ioError, keyID: key.id, message: error.description)
        }
    }

    /// Deletes the key `id`, also while locked (see ``KeyStore/delete(_:)``).
    public func delete(_ id: KeyID) throws(KeyStoreError) {
        guard let file = try fileName(of: id) else { return }
        do {
            // Overwrite in place before unlinking: a file system without copy-on-write then keeps no stale key
            // block, and any other name for the file reads zeros too.
            let full = path + "/" + file
            // Best effort: the unlink below is what deletion needs, and it must not be stopped by a file that
            // cannot be overwritten (a symlink planted in its place is never followed).
            try? DurableFiles.zeroInPlace(full)
            // A crash inside an earlier `add` can leave a second name for the key file (its temporary file,
            // linked but not yet unlinked): it goes with the key.
            for leftover in DurableFiles.leftoverLinks(to: full, in: path) { try DurableFiles.remove(leftover) }
            try DurableFiles.remove(full)
            try DurableFiles.syncDirectory(path)
        } catch {
            throw KeyStoreError(code: .ioError, keyID: id, message: error.description)
        }
    }

    /// Every key's id and namespace, without reading key bytes (see ``KeyStore/listKeys()``).
    public func listKeys() throws(KeyStoreError) -> [KeyListing] {
        try entries().compactMap(Self.listing).sorted { ($0.namespace, $0.id) < ($1.namespace, $1.id) }
    }

    /// This device's identity in this store (see ``KeyStore/deviceIdentity(create:)``).
    public func deviceIdentity(create: Bool) throws(KeyStoreError) -> String? {
        try requireDirectory()
        let file = path + "/device-identity"
        return try deviceIdentityLock.withLock { _ throws(KeyStoreError) -> String? in
            let bytes: [UInt8]
            do throws(DurableFiles.Failure) { bytes = try DurableFiles.read(file, limit: 64) } catch {
                guard error.isNotFound else {
                    throw KeyStoreError(code: .ioError, keyID: nil, message: error.description)
                }
                guard create else { return nil }
                let identity = Hex.encode(AESGCM.randomBytes(16))
                do throws(DurableFiles.Failure) {
                    try DurableFiles.write(Array(identity.utf8), to: file, mode: 0o600, exclusive: true)
                } catch {
                    throw KeyStoreError(code: .ioError, keyID: nil, message: error.description)
                }
                return identity
            }
            let text = String(decoding: bytes, as: UTF8.self)
            guard text.utf8.count == 32, text.utf8.allSatisfy(Hex.isLowercaseDigit) else {
                throw KeyStoreError(code: .corrupt, keyID: nil, message: "\(file) is not a device identity")
            }
            return text
        }
    }

    // MARK: - Files

    static func fileName(namespace: String, id: KeyID) -> String { "\(namespace).\(id.rawValue).key" }

    static func listing(_ file: String) -> KeyListing? {
        let parts = file.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[2] == "key", let id = KeyID(rawValue: String(parts[1])),
            (try? StoredKey.validate(namespace: String(parts[0]))) != nil
        else { return nil }
        return KeyListing(id: id, namespace: String(parts[0]))
    }

    private func fileName(of id: KeyID) throws(KeyStoreError) -> String? {
        try entries().first { Self.listing($0)?.id == id }
    }

    private func entries() throws(KeyStoreError) -> [String] {
        try requireDirectory()
        do { return try FileManager.default.contentsOfDirectory(atPath: path) } catch {
            throw KeyStoreError(
                code: .unavailable, keyID: nil, message: "key directory \(path) cannot be listed: \(error)")
        }
    }

    private func requireDirectory() throws(KeyStoreError) {
        guard DurableFiles.kind(DurableFiles.resolved(path)) == .directory else {
            throw KeyStoreError(
                code: .unavailable, keyID: nil,
                message: "key directory \(path) is gone or no longer a directory; no key is treated as absent")
        }
    }
}
