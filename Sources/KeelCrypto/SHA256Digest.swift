import KeelCore

#if canImport(CryptoKit)
    import CryptoKit
#elseif canImport(CCrypto)
    import CCrypto
#endif

/// SHA-256 through the platform's crypto library: CryptoKit on Apple platforms, OpenSSL libcrypto
/// elsewhere. Used to record which contract a generated file came from, the body of each operation the
/// HTTP client journals, and to checksum key files.
package enum SHA256Digest {
    /// The 32-byte digest of `bytes`.
    package static func bytes(_ bytes: [UInt8]) -> [UInt8] {
        #if canImport(CryptoKit)
            return Array(SHA256.hash(data: bytes))
        #elseif canImport(CCrypto)
            var digest = [UInt8](repeating: 0, count: 32)
            var length: UInt32 = 0
            let succeeded = bytes.withUnsafeBytes { input in
                digest.withUnsafeMutableBufferPointer { output in
                    EVP_Digest(input.baseAddress, input.count, output.baseAddress, &length, EVP_sha256(), nil)
                }
            }
            // EVP_Digest with a built-in algorithm fails only when libcrypto cannot allocate.
            precondition(succeeded == 1 && length == 32, "libcrypto SHA-256 failed")
            return digest
        #endif
    }

    /// The lowercase hex digest of `bytes`, as `shasum -a 256` prints it.
    package static func hex(_ bytes: [UInt8]) -> String { Hex.encode(Self.bytes(bytes)) }
}
