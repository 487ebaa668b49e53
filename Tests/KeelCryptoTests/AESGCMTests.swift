import Testing

@testable import KeelCrypto

/// The platform binding of AES-256-GCM, checked against the published GCM test vectors (McGrew and Viega's
/// GCM specification as submitted to NIST, test cases 13–16: the AES-256 ones), and its refusals.
@Suite struct AESGCMTests {
    struct Vector: CustomTestStringConvertible, Sendable {
        let name: String
        let key: String
        let nonce: String
        let plaintext: String
        let aad: String
        let ciphertext: String
        let tag: String
        var testDescription: String { name }
    }

    static let vectors: [Vector] = [
        Vector(
            name: "test case 13 (empty plaintext, zero key)",
            key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12), plaintext: "",
            aad: "", ciphertext: "", tag: "530f8afbc74536b9a963b4f1c4cb738b"),
        Vector(
            name: "test case 14 (one zero block)",
            key: String(repeating: "00", count: 32), nonce: String(repeating: "00", count: 12),
            plaintext: String(repeating: "00", count: 16), aad: "",
            ciphertext: "cea7403d4d606b6e074ec5d3baf39d18", tag: "d0d1c8a799996bf0265b98b5d48ab919"),
        Vector(
            name: "test case 15 (four blocks)",
            key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            nonce: "cafebabefacedbaddecaf888",
            plaintext:
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b391aafd255",
            aad: "",
            ciphertext:
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662898015ad",
            tag: "b094dac5d93471bdec1a502270e3cc6c"),
        Vector(
            name: "test case 16 (partial block, associated data)",
            key: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308",
            nonce: "cafebabefacedbaddecaf888",
            plaintext:
                "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72"
                + "1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39",
            aad: "feedfacedeadbeeffeedfacedeadbeefabaddad2",
            ciphertext:
                "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa"
                + "8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662",
            tag: "76fc6ece0f4e1768cddf8853bb2d551b"),
    ]

    static func bytes(_ hex: String) -> [UInt8] {
        var result: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            result.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return result
    }

    static func seal(_ cipher: any AESGCMCipher, _ plaintext: [UInt8], nonce: [UInt8], aad: [UInt8]) -> [UInt8] {
        var output = [UInt8](repeating: 0, count: plaintext.count + AESGCM.tagLength)
        plaintext.withUnsafeBytes { p in
            nonce.withUnsafeBytes { n in
                aad.withUnsafeBytes { a in output.withUnsafeMutableBytes { cipher.seal(p, nonce: n, aad: a, into: $0) }
                }
            }
        }
        return output
    }

    static func open(_ cipher: any AESGCMCipher, _ sealed: [UInt8], nonce: [UInt8], aad: [UInt8]) -> [UInt8]? {
        var output = [UInt8](repeating: 0xEE, count: sealed.count - AESGCM.tagLength)
        let opened = sealed.withUnsafeBytes { s in
            nonce.withUnsafeBytes { n in
                aad.withUnsafeBytes { a in output.withUnsafeMutableBytes { cipher.open(s, nonce: n, aad: a, into: $0) }
                }
            }
        }
        if !opened {
            // A refused open never leaves unauthenticated plaintext in the caller's buffer.
            #expect(output.allSatisfy { $0 == 0 })
            return nil
        }
        return output
    }

    @Test(arguments: vectors) func sealsAndOpensThePublishedVectors(_ vector: Vector) {
        let cipher = AESGCM.cipher(key: KeyMaterial(Self.bytes(vector.key)))
        let sealed = Self.seal(
            cipher, Self.bytes(vector.plaintext), nonce: Self.bytes(vector.nonce), aad: Self.bytes(vector.aad))
        #expect(sealed == Self.bytes(vector.ciphertext) + Self.bytes(vector.tag))
        let opened = Self.open(cipher, sealed, nonce: Self.bytes(vector.nonce), aad: Self.bytes(vector.aad))
        #expect(opened == Self.bytes(vector.plaintext))
    }

    @Test(arguments: vectors) func refusesAnyFlippedBitOfTheVector(_ vector: Vector) {
        let cipher = AESGCM.cipher(key: KeyMaterial(Self.bytes(vector.key)))
        let sealed = Self.bytes(vector.ciphertext) + Self.bytes(vector.tag)
        let nonce = Self.bytes(vector.nonce)
        let aad = Self.bytes(vector.aad)
        for bit in 0..<(sealed.count * 8) {
            var tampered = sealed
            tampered[bit / 8] ^= 1 << (bit % 8)
            #expect(Self.open(cipher, tampered, nonce: nonce, aad: aad) == nil, "bit \(bit)")
        }
        var otherNonce = nonce
        otherNonce[0] ^= 1
        #expect(Self.open(cipher, sealed, nonce: otherNonce, aad: aad) == nil)
        #expect(Self.open(cipher, sealed, nonce: nonce, aad: aad + [0]) == nil)
        var otherKey = Self.bytes(vector.key)
        otherKey[31] ^= 0x80
        #expect(Self.open(AESGCM.cipher(key: KeyMaterial(otherKey)), sealed, nonce: nonce, aad: aad) == nil)
    }

    @Test func reusedContextsKeepEachSealIndependent() {
        // Contexts are reused per key: interleaving seals and opens of different sizes must not leak state
        // from one operation into the next.
        let cipher = AESGCM.cipher(key: KeyMaterial(AESGCM.randomBytes(32)))
        for length in [0, 1, 15, 16, 17, 1024, 4097] {
            let plaintext = AESGCM.randomBytes(length)
            let nonce = AESGCM.randomBytes(12)
            let sealed = Self.seal(cipher, plaintext, nonce: nonce, aad: [UInt8(length & 0xFF)])
            #expect(Self.open(cipher, Array(sealed), nonce: nonce, aad: [UInt8(length & 0xFF)]) == plaintext)
            #expect(Self.open(cipher, Array(sealed), nonce: nonce, aad: []) == nil)
        }
    }

    @Test func randomBytesAreFreshEveryDraw() {
        let draws = Set((0..<1000).map { _ in AESGCM.randomBytes(12) })
        #expect(draws.count == 1000)
        #expect(!draws.contains([UInt8](repeating: 0, count: 12)))
    }

    /// Nonces from many tasks at once, across several refills of the pool (4 KiB holds 341 nonces): no two
    /// alike, none of zeros (a byte handed out twice, or one the pool zeroed after use, would show here).
    @Test func noncesAreFreshAcrossRefillsAndTasks() async {
        let perTask = 500
        let draws = await withTaskGroup(of: [[UInt8]].self) { group in
            for _ in 0..<8 {
                group.addTask {
                    (0..<perTask).map { _ in
                        var nonce = [UInt8](repeating: 0, count: AESGCM.nonceLength)
                        nonce.withUnsafeMutableBytes { AESGCM.fillNonce($0) }
                        return nonce
                    }
                }
            }
            return await group.reduce(into: []) { $0 += $1 }
        }
        #expect(draws.count == 8 * perTask)
        #expect(Set(draws).count == draws.count)
        // No run of zero bytes where a nonce should be random: 12 zero bytes by chance is 2⁻⁹⁶.
        #expect(!draws.contains([UInt8](repeating: 0, count: AESGCM.nonceLength)))
        // An odd length that does not divide the pool lands across the refill boundary too.
        let odd = (0..<1000).map { _ in
            var nonce = [UInt8](repeating: 0, count: 7)
            nonce.withUnsafeMutableBytes { AESGCM.fillNonce($0) }
            return nonce
        }
        #expect(Set(odd).count == odd.count)
    }

    @Test func keyMaterialComparesInConstantTimeAndByValue() {
        let bytes = AESGCM.randomBytes(32)
        let key = KeyMaterial(bytes)
        #expect(key.matches(bytes))
        var other = bytes
        other[7] ^= 1
        #expect(!key.matches(other))
        #expect(!key.matches(bytes.dropLast()))
    }

    @Test func wipeZeroesTheBuffer() {
        var secret = AESGCM.randomBytes(64)
        wipe(&secret)
        #expect(secret == [UInt8](repeating: 0, count: 64))
    }
}
