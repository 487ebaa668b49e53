import Foundation
import KeelCore
import KeelStore
import KeelTesting
import Testing

/// The file key store on a real directory: where it may live, how it writes, what it does with damage.
@Suite(.timeLimit(.minutes(1))) struct FileKeyStoreTests {
    let root: TemporaryDirectory
    init() throws { root = try TemporaryDirectory(prefix: "keel-keys") }

    var data: URL { root.url("data") }
    var keys: URL { root.url("keys") }

    func makeStore() throws -> FileKeyStore {
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        return try FileKeyStore(directory: keys, dataDirectories: [data])
    }

    static func key(_ namespace: String = "ns1", byte: UInt8 = 7) throws -> StoredKey {
        let id = KeyID(rawValue: String(repeating: String(format: "%02x", byte), count: 16))!
        return try StoredKey(
            id: id, namespace: namespace, entanglement: [UInt8](repeating: 1, count: 16),
            keyBytes: [UInt8](repeating: byte, count: 32))
    }

    static func mode(_ url: URL) throws -> Int {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
    }

    @Test func keysAreStoredDurablyIn0600FilesInA0700Directory() throws {
        let store = try makeStore()
        let key = try Self.key()
        try store.add(key)
        #expect(try Self.mode(keys) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: keys.path)
        #expect(files == ["ns1.\(key.id).key"])
        #expect(try Self.mode(keys.appendingPathComponent(files[0])) == 0o600)
        let reopened = try FileKeyStore(directory: keys, dataDirectories: [data])
        let read = try #require(try reopened.key(key.id))
        #expect(read.namespace == "ns1")
        #expect(read.entanglement == key.entanglement)
        #expect(read.withKeyBytes { Array($0) } == [UInt8](repeating: 7, count: 32))
        #expect(try reopened.listKeys() == [KeyListing(id: key.id, namespace: "ns1")])
        #expect(throws: KeyStoreError.self) { try reopened.add(key) }
        do { try reopened.add(key) } catch { #expect(error.code == .duplicate) }
        try reopened.delete(key.id)
        #expect(try reopened.key(key.id) == nil)
        #expect(try reopened.listKeys().isEmpty)
        try reopened.delete(key.id)  // deleting an absent key is not an error
    }

    @Test func aKeyDirectoryInsideOrAroundADataDirectoryIsRefused() throws {
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        func refused(_ directory: URL, _ dataDirectories: [URL]) -> Bool {
            do {
                _ = try FileKeyStore(directory: directory, dataDirectories: dataDirectories)
                return false
            } catch { return error.code == .insideDataDirectory }
        }
        #expect(refused(data, [data]))
        #expect(refused(data.appendingPathComponent("keys"), [data]))
        #expect(refused(data.appendingPathComponent("a/b/../keys"), [data]))
        #expect(refused(root.url(""), [data]))  // the data directory would be inside the key directory
        // Through a symlink that points into the data directory.
        try FileManager.default.createSymbolicLink(at: root.url("innocent"), withDestinationURL: data)
        #expect(refused(root.url("innocent/keys"), [data]))
        #expect(refused(keys, [root.url("innocent")]) == false)
        // Beside it is fine.
        #expect(!refused(keys, [data]))
        #expect(FileManager.default.fileExists(atPath: keys.path))
    }

    @Test func aDamagedKeyFileIsReportedAndLeftAlone() throws {
        let store = try makeStore()
        let key = try Self.key()
        try store.add(key)
        let file = keys.appendingPathComponent("ns1.\(key.id).key")
        var bytes = try Data(contentsOf: file)
        bytes[40] ^= 0x01
        try bytes.write(to: file)
        #expect(throws: KeyStoreError.self) { try store.key(key.id) }
        do { _ = try store.key(key.id) } catch { #expect(error.code == .corrupt) }
        try Data("not a key".utf8).write(to: file)
        do { _ = try store.key(key.id) } catch { #expect(error.code == .corrupt) }
        try Data().write(to: file)
        do { _ = try store.key(key.id) } catch { #expect(error.code == .corrupt) }
        #expect(FileManager.default.fileExists(atPath: file.path))  // nothing deleted
    }

    @Test func aKeyOfTheWrongLengthIsTypedNotTruncated() throws {
        #expect(throws: KeyStoreError.self) {
            try StoredKey(
                id: KeyID(rawValue: String(repeating: "ab", count: 16))!, namespace: "n", entanglement: [],
                keyBytes: [1, 2, 3])
        }
        do {
            _ = try StoredKey(
                id: KeyID(rawValue: String(repeating: "ab", count: 16))!, namespace: "n", entanglement: [],
                keyBytes: Array(repeating: 0, count: 16))
        } catch { #expect(error.code == .wrongKeyLength) }
        #expect(KeyID(rawValue: "AB") == nil)
        #expect(KeyID(rawValue: String(repeating: "AB", count: 16)) == nil)
    }

    @Test func aKeyDirectoryDeletedWhileRunningIsUnavailableNeverEmpty() throws {
        let store = try makeStore()
        let key = try Self.key()
        try store.add(key)
        try FileManager.default.removeItem(at: keys)
        for attempt in [
            { _ = try store.key(key.id) }, { _ = try store.listKeys() }, { try store.add(try Self.key(byte: 9)) },
        ] as [() throws -> Void] {
            do {
                try attempt()
                Issue.record("a vanished key directory answered as if empty")
            } catch let error as KeyStoreError { #expect(error.code == .unavailable) }
        }
        // Replaced by a file: the same.
        try Data("x".utf8).write(to: keys)
        do { _ = try store.listKeys() } catch { #expect(error.code == .unavailable) }
    }

    @Test func aLockedStoreRefusesReadsButStillListsAndShreds() throws {
        let store = try makeStore()
        let key = try Self.key()
        try store.add(key)
        store.lock()
        #expect(store.isLocked)
        do {
            _ = try store.key(key.id)
            Issue.record("a locked store handed out a key")
        } catch { #expect(error.code == .locked) }
        #expect(try store.listKeys().count == 1)
        try store.delete(key.id)
        store.unlock()
        #expect(try store.key(key.id) == nil)
    }

    @Test func theDeviceIdentityIsCreatedOnceAndNotByReaders() throws {
        let store = try makeStore()
        #expect(try store.deviceIdentity(create: false) == nil)
        let identity = try #require(try store.deviceIdentity(create: true))
        #expect(identity.count == 32)
        #expect(try FileKeyStore(directory: keys, dataDirectories: [data]).deviceIdentity(create: true) == identity)
        let other = try FileKeyStore(directory: root.url("other-keys"), dataDirectories: [data])
        #expect(try other.deviceIdentity(create: true) != identity)
    }

    @Test func aMissingDirectoryIsNotCreatedWhenOnlyInspecting() throws {
        #expect(throws: KeyStoreError.self) {
            try FileKeyStore(directory: keys, dataDirectories: [], create: false)
        }
        #expect(!FileManager.default.fileExists(atPath: keys.path))
    }

    /// MOB-DATA-002: deleting a key leaves no readable copy — its own blocks are overwritten (every other
    /// name for the file reads zeros), and the second name a crash inside `add` can leave is removed.
    @Test func aDeletedKeyLeavesNoReadableCopyUnderAnyName() throws {
        let store = try makeStore()
        let key = try Self.key(byte: 9)
        try store.add(key)
        let file = keys.appendingPathComponent("ns1.\(key.id).key").path
        let elsewhere = root.url("another-name").path  // a hard link the store does not know
        // What a crash between link and unlink inside `add` leaves.
        let leftover = keys.appendingPathComponent(".tmp-0123456789abcdef.part").path
        #expect(link(file, elsewhere) == 0)
        #expect(link(file, leftover) == 0)
        try store.delete(key.id)
        #expect(!FileManager.default.fileExists(atPath: file))
        #expect(!FileManager.default.fileExists(atPath: leftover))
        let remaining = try #require(FileManager.default.contents(atPath: elsewhere))
        #expect(!remaining.isEmpty)
        #expect(remaining.allSatisfy { $0 == 0 })
        #expect(try store.listKeys().isEmpty)
    }
}
