/// AES-256-GCM with 96-bit nonces and 128-bit tags: the one cipher Keel seals with.
///
/// Keel never implements a cipher. This small internal protocol is the whole surface the sealing code
/// sees; its two adapters are thin bindings of the platform library — OpenSSL's EVP interface on Linux
/// (``OpenSSLAESGCM``), CryptoKit on Apple platforms (``CryptoKitAESGCM``) — checked against the NIST GCM
/// test vectors.
package protocol AESGCMCipher: Sendable {
    /// Encrypts `plaintext` and authenticates it with `aad`, writing the ciphertext (same length as the
    /// plaintext) followed by the 16-byte tag into `output`.
    ///
    /// - Precondition: `nonce` is 12 bytes and `output` holds exactly `plaintext.count + 16` bytes.
    func seal(
        _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer)

    /// Checks the tag that ends `sealed` against the ciphertext before it and `aad`, and only then writes the
    /// plaintext into `output`. Returns false, with `output` zeroed, when the tag does not match (wrong key,
    /// wrong associated data, any flipped bit).
    ///
    /// - Precondition: `nonce` is 12 bytes, `sealed` at least 16 bytes and `output` exactly `sealed.count - 16`.
    func open(
        _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
        into output: UnsafeMutableRawBufferPointer
    ) -> Bool
}

package enum AESGCM {
    /// The key length of AES-256.
    package static let keyLength = 32
    /// The nonce length GCM is designed for (96 bits): nonces are drawn at random for every seal.
    package static let nonceLength = 12
    /// The full 128-bit tag; Keel never truncates it.
    package static let tagLength = 16

    /// The platform's AES-256-GCM keyed with `key`.
    package static func cipher(key: KeyMaterial) -> any AESGCMCipher {
        #if canImport(CryptoKit)
            CryptoKitAESGCM(key: key)
        #else
            OpenSSLAESGCM(key: key)
        #endif
    }

    /// `count` bytes from the platform's cryptographically secure generator (nonces, keys, markers).
    /// Never injectable: a seeded source here would make every key and nonce predictable.
    package static func randomBytes(_ count: Int) -> [UInt8] {
        #if canImport(CryptoKit)
            CryptoKitAESGCM.randomBytes(count)
        #else
            OpenSSLAESGCM.randomBytes(count)
        #endif
    }

    /// Fills `buffer` from the same generator as ``randomBytes(_:)`` without allocating.
    package static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
        #if canImport(CryptoKit)
            CryptoKitAESGCM.fillRandom(buffer)
        #else
            OpenSSLAESGCM.fillRandom(buffer)
        #endif
    }

    /// Fills `nonce` (at most 64 bytes) with fresh bytes from the same generator as ``randomBytes(_:)``,
    /// for a seal. Only for nonces, which are public: on Linux they come out of a buffer of the generator's
    /// output drawn 4 KiB at a time (see `NoncePool`), never a key.
    package static func fillNonce(_ nonce: UnsafeMutableRawBufferPointer) {
        #if canImport(CryptoKit)
            CryptoKitAESGCM.fillRandom(nonce)
        #else
            NoncePool.shared.fill(nonce)
        #endif
    }
}

/// The 32 bytes of one AES-256 key, held in memory of their own and overwritten with zeros when the last
/// reference goes (a closed vault does not leave its keys in freed heap memory).
package final class KeyMaterial: @unchecked Sendable {
    // @unchecked Sendable: the bytes are written once, in init, and only read afterwards.
    package let bytes: UnsafeMutableRawBufferPointer

    /// Copies `bytes`, which must be ``AESGCM/keyLength`` long.
    package init(_ bytes: some Collection<UInt8>) {
        precondition(bytes.count == AESGCM.keyLength, "KeyMaterial: an AES-256 key is 32 bytes")
        self.bytes = .allocate(byteCount: AESGCM.keyLength, alignment: 16)
        self.bytes.copyBytes(from: bytes)
    }

    /// A new key from the system's secure generator.
    package static func random() -> KeyMaterial {
        var fresh = AESGCM.randomBytes(AESGCM.keyLength)
        defer { wipe(&fresh) }
        return KeyMaterial(fresh)
    }

    /// Whether `self` and `other` hold the same key (constant time).
    package func matches(_ other: some Collection<UInt8>) -> Bool {
        guard other.count == AESGCM.keyLength else { return false }
        var difference: UInt8 = 0
        for (a, b) in zip(bytes, other) { difference |= a ^ b }
        return difference == 0
    }

    deinit {
        wipeMemory(bytes)
        bytes.deallocate()
    }
}

/// Overwrites `buffer` with zeros in a way the optimizer may not drop (`OPENSSL_cleanse`, `memset_s`).
package func wipeMemory(_ buffer: UnsafeMutableRawBufferPointer) {
    #if canImport(CryptoKit)
        CryptoKitAESGCM.wipe(buffer)
    #else
        OpenSSLAESGCM.wipe(buffer)
    #endif
}

/// Overwrites an array's bytes with zeros (key bytes read from a file, before the array is released).
package func wipe(_ array: inout [UInt8]) {
    array.withUnsafeMutableBytes { wipeMemory($0) }
}
