#if canImport(CryptoKit)
    import CryptoKit
    import Foundation

    /// AES-256-GCM through CryptoKit (Apple platforms). A thin binding of `AES.GCM`.
    struct CryptoKitAESGCM: AESGCMCipher {
        private let key: SymmetricKey

        init(key: KeyMaterial) { self.key = SymmetricKey(data: UnsafeRawBufferPointer(key.bytes)) }

        func seal(
            _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            into output: UnsafeMutableRawBufferPointer
        ) {
            precondition(nonce.count == AESGCM.nonceLength && output.count == plaintext.count + AESGCM.tagLength)
            // AES.GCM.seal throws only for a nonce of the wrong size, excluded above.
            guard let nonce = try? AES.GCM.Nonce(data: nonce),
                let box = try? AES.GCM.seal(plaintext, using: key, nonce: nonce, authenticating: aad)
            else { preconditionFailure("CryptoKit AES-256-GCM encryption failed") }
            box.ciphertext.copyBytes(to: output)
            box.tag.copyBytes(to: UnsafeMutableRawBufferPointer(rebasing: output[plaintext.count...]))
        }

        func open(
            _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            into output: UnsafeMutableRawBufferPointer
        ) -> Bool {
            let ciphertextLength = sealed.count - AESGCM.tagLength
            precondition(nonce.count == AESGCM.nonceLength && ciphertextLength >= 0 && output.count == ciphertextLength)
            guard
                let box = try? AES.GCM.SealedBox(
                    nonce: AES.GCM.Nonce(data: nonce),
                    ciphertext: UnsafeRawBufferPointer(rebasing: sealed[..<ciphertextLength]),
                    tag: UnsafeRawBufferPointer(rebasing: sealed[ciphertextLength...])),
                let plaintext = try? AES.GCM.open(box, using: key, authenticating: aad)
            else {
                wipeMemory(output)  // as the protocol promises: a refused envelope leaves zeros, never bytes
                return false
            }
            plaintext.copyBytes(to: output)
            return true
        }

        static func randomBytes(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { fillRandom($0) }
            return bytes
        }

        static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
            // SystemRandomNumberGenerator is the system CSPRNG (arc4random_buf) on Apple platforms.
            var generator = SystemRandomNumberGenerator()
            for index in buffer.indices { buffer[index] = generator.next() }
        }

        static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            _ = memset_s(base, buffer.count, 0, buffer.count)
        }
    }
#endif
