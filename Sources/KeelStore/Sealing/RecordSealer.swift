import Foundation
import KeelCore
import KeelCrypto

/// Seals and opens the records of one dataset of one account with one key.
///
/// The envelope (format version 1):
///
/// ```
/// version (1) = 0x01 | key id (16) | nonce (12) | ciphertext | tag (16)
/// ```
///
/// The associated data binds the context, so a ciphertext moved anywhere else fails to open:
///
/// ```
/// "keel.seal" 0x00 | version | key id | u32 length + account id bytes | u32 length + dataset name
///                   | u32 length + record id
/// ```
///
/// Nonces are 96 random bits from the system generator for every seal; with one key per account and
/// dataset, the number of seals per key stays far below the 2^32 that random GCM nonces allow.
final class RecordSealer: Sendable {
    static let version: UInt8 = 1
    static let headerLength = 1 + 16 + AESGCM.nonceLength
    static let overhead = headerLength + AESGCM.tagLength

    let keyID: KeyID
    private let keyIDBytes: [UInt8]
    private let cipher: any AESGCMCipher
    private let prefix: [UInt8]

    init(key: StoredKey, account: AccountID, dataset: String) {
        keyID = key.id
        keyIDBytes = key.id.bytes
        cipher = AESGCM.cipher(key: key.material)
        var prefix = Array("keel.seal".utf8) + [0, Self.version] + keyIDBytes
        for part in [account.rawValue, dataset] {
            Self.appendLength(part.utf8.count, to: &prefix)
            prefix += part.utf8
        }
        self.prefix = prefix
    }

    /// The envelope of `plaintext` as record `recordID`.
    func seal(_ plaintext: UnsafeRawBufferPointer, recordID: String) -> Data {
        var envelope = Data(count: Self.overhead + plaintext.count)
        envelope.withUnsafeMutableBytes { output in
            output[0] = Self.version
            output.baseAddress!.advanced(by: 1).copyMemory(from: keyIDBytes, byteCount: 16)
            let nonce = UnsafeMutableRawBufferPointer(rebasing: output[17..<Self.headerLength])
            AESGCM.fillNonce(nonce)
            withAssociatedData(recordID) { aad in
                cipher.seal(
                    plaintext, nonce: UnsafeRawBufferPointer(nonce), aad: aad,
                    into: UnsafeMutableRawBufferPointer(rebasing: output[Self.headerLength...]))
            }
        }
        return envelope
    }

    /// The plaintext of `envelope` as record `recordID`.
    ///
    /// - Throws: ``VaultError`` `cannotOpen` for anything but an intact envelope sealed by this key for
    ///   this account, dataset and record: never garbage plaintext.
    func open(_ envelope: UnsafeRawBufferPointer, recordID: String, dataset: String) throws(VaultError) -> Data {
        func refuse(_ why: String) -> VaultError {
            VaultError(
                code: .cannotOpen, dataset: dataset, recordID: recordID, message: "record cannot be opened: \(why)")
        }
        guard envelope.count >= Self.overhead else { throw refuse("envelope truncated (\(envelope.count) bytes)") }
        guard envelope[0] == Self.version else { throw refuse("unknown envelope version \(envelope[0])") }
        guard namesKey(envelope) else {
            throw refuse("sealed with key \(Hex.encode(envelope[1..<17])), not \(keyID)")
        }
        var plaintext = Data(count: envelope.count - Self.overhead)
        let opened = plaintext.withUnsafeMutableBytes { output in
            withAssociatedData(recordID) { aad in
                cipher.open(
                    UnsafeRawBufferPointer(rebasing: envelope[Self.headerLength...]),
                    nonce: UnsafeRawBufferPointer(rebasing: envelope[17..<Self.headerLength]), aad: aad, into: output)
            }
        }
        guard opened else {
            throw refuse("authentication failed (wrong key, another record, dataset or account, or altered bytes)")
        }
        return plaintext
    }

    /// Whether `envelope` names this sealer's key (a version-1 envelope), without allocating.
    func sealed(_ envelope: UnsafeRawBufferPointer) -> Bool {
        envelope.count >= Self.overhead && envelope[0] == Self.version && namesKey(envelope)
    }

    /// Whether bytes 1…16 of `envelope` (at least 17 bytes long) are this sealer's key id: one `memcmp`,
    /// as every read checks it.
    private func namesKey(_ envelope: UnsafeRawBufferPointer) -> Bool {
        keyIDBytes.withUnsafeBytes { memcmp(envelope.baseAddress! + 1, $0.baseAddress!, 16) == 0 }
    }

    /// The key id an envelope names, or nil when it is not a version-1 envelope.
    static func keyID(of envelope: UnsafeRawBufferPointer) -> KeyID? {
        guard envelope.count >= overhead, envelope[0] == version else { return nil }
        return KeyID(bytes: Array(envelope[1..<17]))
    }

    private func withAssociatedData<R>(_ recordID: String, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        var recordID = recordID
        return recordID.withUTF8 { record in
            withUnsafeTemporaryAllocation(byteCount: prefix.count + 4 + record.count, alignment: 1) { buffer in
                prefix.withUnsafeBytes { buffer.copyMemory(from: $0) }
                let count = UInt32(record.count)
                buffer[prefix.count] = UInt8(count >> 24)
                buffer[prefix.count + 1] = UInt8((count >> 16) & 0xFF)
                buffer[prefix.count + 2] = UInt8((count >> 8) & 0xFF)
                buffer[prefix.count + 3] = UInt8(count & 0xFF)
                if record.count > 0 {
                    (buffer.baseAddress! + prefix.count + 4).copyMemory(
                        from: record.baseAddress!, byteCount: record.count)
                }
                return body(UnsafeRawBufferPointer(buffer))
            }
        }
    }

    private static func appendLength(_ count: Int, to bytes: inout [UInt8]) {
        let count = UInt32(count)
        bytes += [UInt8(count >> 24), UInt8((count >> 16) & 0xFF), UInt8((count >> 8) & 0xFF), UInt8(count & 0xFF)]
    }
}
