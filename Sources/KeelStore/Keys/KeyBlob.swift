import KeelCore
import KeelCrypto

/// The bytes a key store keeps for one key (a key file, a Keychain item's data):
///
/// ```
/// "KEELKEY" 0x01 | id (16) | namespace length (1) | namespace | marker length (1) | marker
///               | key length (1) | key | first 8 bytes of SHA-256 of everything before
/// ```
///
/// The checksum tells a damaged file (`corrupt`) from a well-formed key of the wrong length
/// (`wrongKeyLength`); neither is ever deleted or replaced by the store.
enum KeyBlob {
    static let magic: [UInt8] = Array("KEELKEY".utf8) + [1]
    static let checksumLength = 8

    static func encode(_ key: StoredKey) -> [UInt8] {
        var bytes = magic + key.id.bytes
        bytes.append(UInt8(key.namespace.utf8.count))
        bytes += key.namespace.utf8
        bytes.append(UInt8(key.entanglement.count))
        bytes += key.entanglement
        bytes.append(UInt8(AESGCM.keyLength))
        key.withKeyBytes { bytes += $0 }
        bytes += SHA256Digest.bytes(bytes).prefix(checksumLength)
        return bytes
    }

    static func decode(_ bytes: [UInt8], expecting id: KeyID) throws(KeyStoreError) -> StoredKey {
        func corrupt(_ why: String) -> KeyStoreError {
            KeyStoreError(code: .corrupt, keyID: id, message: "key \(id) is damaged: \(why)")
        }
        guard bytes.count > magic.count + checksumLength, bytes.starts(with: magic) else {
            throw corrupt(
                bytes.count >= magic.count && bytes.starts(with: magic.dropLast())
                    ? "unknown format version" : "not a Keel key")
        }
        let body = bytes.dropLast(checksumLength)
        guard SHA256Digest.bytes(Array(body)).prefix(checksumLength).elementsEqual(bytes.suffix(checksumLength)) else {
            throw corrupt("checksum mismatch")
        }
        var cursor = body.startIndex + magic.count
        func take(_ count: Int) throws(KeyStoreError) -> [UInt8] {
            guard body.endIndex - cursor >= count else { throw corrupt("truncated") }
            defer { cursor += count }
            return Array(body[cursor..<cursor + count])
        }
        func takeCounted() throws(KeyStoreError) -> [UInt8] { try take(Int(try take(1)[0])) }
        let storedID = try take(16)
        guard storedID == id.bytes else { throw corrupt("it holds key \(Hex.encode(storedID))") }
        let namespace = String(decoding: try takeCounted(), as: UTF8.self)
        let marker = try takeCounted()
        var keyBytes = try takeCounted()
        defer { wipe(&keyBytes) }
        guard cursor == body.endIndex else { throw corrupt("trailing bytes") }
        return try StoredKey(id: id, namespace: namespace, entanglement: marker, keyBytes: keyBytes)
    }
}
