#if !canImport(CryptoKit) && canImport(CCrypto)
    import CCrypto
    import KeelCore

    /// AES-256-GCM through OpenSSL's EVP interface (Linux). A thin binding: key schedules are set up once
    /// per key and reused through a small free list of cipher contexts, so one seal costs one `EVP_*Init`
    /// with the nonce, the update calls and the tag.
    final class OpenSSLAESGCM: AESGCMCipher {
        private let key: KeyMaterial
        private let sealers = Locked<[OpaquePointer]>([])
        private let openers = Locked<[OpaquePointer]>([])

        init(key: KeyMaterial) { self.key = key }

        deinit {
            // EVP_CIPHER_CTX_free cleanses the context's copy of the key schedule.
            for context in sealers.withLock({ $0 }) + openers.withLock({ $0 }) { EVP_CIPHER_CTX_free(context) }
        }

        func seal(
            _ plaintext: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            into output: UnsafeMutableRawBufferPointer
        ) {
            precondition(nonce.count == AESGCM.nonceLength && output.count == plaintext.count + AESGCM.tagLength)
            let context = take(sealers, encrypting: true)
            defer { sealers.withLock { $0.append(context) } }
            var written: Int32 = 0
            let base = output.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let succeeded =
                EVP_EncryptInit_ex(context, nil, nil, nil, nonce.baseAddress!.assumingMemoryBound(to: UInt8.self))
                == 1
                && (aad.isEmpty
                    || EVP_EncryptUpdate(
                        context, nil, &written, aad.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        Int32(aad.count)) == 1)
                && Self.update(plaintext, into: base) { output, written, input, count in
                    EVP_EncryptUpdate(context, output, &written, input, count)
                }
                && EVP_EncryptFinal_ex(context, base + plaintext.count, &written) == 1
                && keel_evp_gcm_get_tag(context, base + plaintext.count, Int32(AESGCM.tagLength)) == 1
            // With a valid key and nonce these calls fail only when libcrypto cannot allocate: nothing to recover.
            precondition(succeeded, "libcrypto AES-256-GCM encryption failed")
        }

        /// Feeds `input` to an EVP update in slices of at most 1 GiB (its lengths are `Int32`: a 2 GiB value in
        /// one call would trap on the conversion), writing the output after `base`. True when every slice went.
        private static func update(
            _ input: UnsafeRawBufferPointer, into base: UnsafeMutablePointer<UInt8>?,
            _ step: (UnsafeMutablePointer<UInt8>?, inout Int32, UnsafePointer<UInt8>, Int32) -> Int32
        ) -> Bool {
            guard let start = input.baseAddress?.assumingMemoryBound(to: UInt8.self), !input.isEmpty else {
                return true
            }
            let slice = 1 << 30
            var offset = 0
            while offset < input.count {
                let count = min(slice, input.count - offset)
                var written: Int32 = 0
                guard step(base.map { $0 + offset }, &written, start + offset, Int32(count)) == 1,
                    Int(written) == count
                else { return false }
                offset += count
            }
            return true
        }

        func open(
            _ sealed: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
            into output: UnsafeMutableRawBufferPointer
        ) -> Bool {
            precondition(nonce.count == AESGCM.nonceLength && sealed.count >= AESGCM.tagLength)
            let ciphertextLength = sealed.count - AESGCM.tagLength
            precondition(output.count == ciphertextLength)
            let context = take(openers, encrypting: false)
            defer { openers.withLock { $0.append(context) } }
            var written: Int32 = 0
            // OpenSSL copies the expected tag; it never writes through this pointer.
            let tag =
                UnsafeMutablePointer(mutating: sealed.baseAddress!.assumingMemoryBound(to: UInt8.self))
                + ciphertextLength
            let base = output.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let opened =
                EVP_DecryptInit_ex(context, nil, nil, nil, nonce.baseAddress!.assumingMemoryBound(to: UInt8.self))
                == 1
                && (aad.isEmpty
                    || EVP_DecryptUpdate(
                        context, nil, &written, aad.baseAddress!.assumingMemoryBound(to: UInt8.self),
                        Int32(aad.count)) == 1)
                && Self.update(UnsafeRawBufferPointer(rebasing: sealed[..<ciphertextLength]), into: base) {
                    output, written, input, count in
                    EVP_DecryptUpdate(context, output, &written, input, count)
                }
                && keel_evp_gcm_set_tag(context, tag, Int32(AESGCM.tagLength)) == 1
                && EVP_DecryptFinal_ex(context, base.map { $0 + ciphertextLength } ?? nil, &written) == 1
            if !opened {
                // The plaintext written before the tag was checked is unauthenticated: never hand it out.
                wipeMemory(output)
                ERR_clear_error()
            }
            return opened
        }

        /// A context keyed for this key and direction: from the free list, or a new one.
        private func take(_ list: Locked<[OpaquePointer]>, encrypting: Bool) -> OpaquePointer {
            if let context = list.withLock({ $0.popLast() }) { return context }
            guard let context = EVP_CIPHER_CTX_new() else {
                fatalError("libcrypto could not allocate a cipher context")
            }
            let keyBytes = key.bytes.baseAddress!.assumingMemoryBound(to: UInt8.self)
            let ready =
                encrypting
                ? EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
                    && keel_evp_gcm_set_ivlen(context, Int32(AESGCM.nonceLength)) == 1
                    && EVP_EncryptInit_ex(context, nil, nil, keyBytes, nil) == 1
                : EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1
                    && keel_evp_gcm_set_ivlen(context, Int32(AESGCM.nonceLength)) == 1
                    && EVP_DecryptInit_ex(context, nil, nil, keyBytes, nil) == 1
            precondition(ready, "libcrypto could not set up AES-256-GCM")
            return context
        }

        static func randomBytes(_ count: Int) -> [UInt8] {
            var bytes = [UInt8](repeating: 0, count: count)
            bytes.withUnsafeMutableBytes { fillRandom($0) }
            return bytes
        }

        static func fillRandom(_ buffer: UnsafeMutableRawBufferPointer) {
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            // RAND_bytes draws from OpenSSL's DRBG, seeded and reseeded from the operating system. It fails
            // only when the system cannot seed it: sealing without fresh nonces is never acceptable.
            precondition(
                RAND_bytes(base.assumingMemoryBound(to: UInt8.self), Int32(buffer.count)) == 1,
                "the system's secure random generator is unavailable")
        }

        static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
            guard let base = buffer.baseAddress, !buffer.isEmpty else { return }
            OPENSSL_cleanse(base, buffer.count)
        }
    }
#endif
