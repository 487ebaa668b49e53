import Foundation
import KeelCore
import KeelCrypto

/// Seals and opens the records of one dataset of one account with one key.
///
/// The envelope (format version 2; version 1 envelopes still open):
///
/// ```
/// version (1) = 0x02 | key id (16) | nonce (12) | ciphertext | tag (16)
/// ```
///
/// The associated data binds the context, so a ciphertext moved anywhere else fails to open:
///
/// ```
/// "keel.seal" 0x00 | version | key id | kind (1) | u32 length + account id bytes | u32 length + dataset name
///                   | u32 length + record id
/// ```
///
/// `kind` tells a record from a file of the dataset (`r`, `f`). Version 1 had no kind: a file `x` and a
/// record with id `file:x` shared their associated data, so one's ciphertext opened as the other. Version
/// 1 envelopes open with the version 1 associated data (the version byte is bound, so a version 2 envelope
/// relabelled 1 does not open); everything sealed now is version 2.
///
/// Nonces are 96 random bits from the system generator for every seal; with one key per account and
/// dataset, the number of seals per key stays far below the 2^32 that random GCM nonces allow.
final class RecordSealer: Sendable {
    /// The version sealed now.
    static let version: UInt8 = 2
    /// The versions that open.
    static let versions: ClosedRange<UInt8> = 1...2
    static let headerLength = 1 + 16 + AESGCM.nonceLength
    static let overhead = headerLength + AESGCM.tagLength

    /// What a sealed value is in its dataset: a record, or a file (``Vault/writeFile(_:named:contents:)``).
    enum Kind: UInt8 {
        case record = 0x72  // "r"
        case file = 0x66  // "f"
    }

    let keyID: KeyID
    private let keyIDBytes: [UInt8]
    private let cipher: any AESGCMCipher
    /// The associated data before the record id, by kind (version 2), and as version 1 wrote it.
    private let recordPrefix: [UInt8]
    private let filePrefix: [UInt8]
    private let version1Prefix: [UInt8]

    init(key: StoredKey, account: AccountID, dataset: String) {
        keyID = key.id
        keyIDBytes = key.id.bytes
        cipher = AESGCM.cipher(key: key.material)
        func prefix(version: UInt8, kind: Kind?) -> [UInt8] {
            var prefix = Array("keel.seal".utf8) + [0, version] + key.id.bytes
            if let kind { prefix.append(kind.rawValue) }
            for part in [account.rawValue, dataset] {
                Self.appendLength(part.utf8.count, to: &prefix)
                prefix += part.utf8
            }
            return prefix
        }
        recordPrefix = prefix(version: Self.version, kind: .record)
        filePrefix = prefix(version: Self.version, kind: .file)
        version1Prefix = prefix(version: 1, kind: nil)
    }

    /// The envelope of `plaintext` as record (or file) `recordID`.
    func seal(_ plaintext: UnsafeRawBufferPointer, recordID: String, kind: Kind = .record) -> Data {
        var envelope = Data(count: Self.overhead + plaintext.count)
        envelope.withUnsafeMutableBytes { output in
            output[0] = Self.version
            output.baseAddress!.advanced(by: 1).copyMemory(from: keyIDBytes, byteCount: 16)
            let nonce = UnsafeMutableRawBufferPointer(rebasing: output[17..<Self.headerLength])
            AESGCM.fillNonce(nonce)
            withAssociatedData(recordID, prefix: kind == .file ? filePrefix : recordPrefix) { aad in
                cipher.seal(
                    plaintext, nonce: UnsafeRawBufferPointer(nonce), aad: aad,
                    into: UnsafeMutableRawBufferPointer(rebasing: output[Self.headerLength...]))
            }
        }
        return envelope
    }

    /// The plaintext of `envelope` as record (or file) `recordID`.
    ///
    /// - Throws: ``VaultError`` `cannotOpen` for anything but an intact envelope sealed by this key for
    ///   this account, dataset and record (or file): never garbage plaintext.
    func open(_ envelope: UnsafeRawBufferPointer, recordID: String, dataset: String, kind: Kind = .record)
        throws(VaultError) -> Data
    {
        func refuse(_ why: String) -> VaultError {
            VaultError(
                code: .cannotOpen, dataset: dataset, recordID: recordID, message: "record cannot be opened: \(why)")
        }
        guard envelope.count >= Self.overhead else { throw refuse("envelope truncated (\(envelope.count) bytes)") }
        guard Self.versions.contains(envelope[0]) else {
            throw refuse("unknown envelope version \(envelope[0])")
        }
        let prefix = envelope[0] == 1 ? version1Prefix : (kind == .file ? filePrefix : recordPrefix)
        guard namesKey(envelope) else {
            throw refuse("sealed with key \(Hex.encode(envelope[1..<17])), not \(keyID)")
        }
        var plaintext = Data(count: envelope.count - Self.overhead)
        let opened = plaintext.withUnsafeMutableBytes { output in
            withAssociatedData(recordID, prefix: prefix) { aad in
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

    /// Whether `envelope` names this sealer's key (an envelope of a version that opens), without allocating.
    func sealed(_ envelope: UnsafeRawBufferPointer) -> Bool {
        envelope.count >= Self.overhead && Self.versions.contains(envelope[0]) && namesKey(envelope)
    }

    /// Whether bytes 1…16 of `envelope` (at least 17 bytes long) are this sealer's key id: one `memcmp`,
    /// as every read checks it.
    private func namesKey(_ envelope: UnsafeRawBufferPointer) -> Bool {
        keyIDBytes.withUnsafeBytes { memcmp(envelope.baseAddress! + 1, $0.baseAddress!, 16) == 0 }
    }

    /// The key id an envelope names, or nil when it is not an envelope of a version that opens.
    static func keyID(of envelope: UnsafeRawBufferPointer) -> KeyID? {
        guard envelope.count >= overhead, versions.contains(envelope[0]) else { return nil }
        return KeyID(bytes: Array(envelope[1..<17]))
    }

    private func withAssociatedData<R>(
        _ recordID: String, prefix: [UInt8], _ body: (UnsafeRawBufferPointer) -> R
    ) -> R {
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
