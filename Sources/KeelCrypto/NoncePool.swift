#if !canImport(CryptoKit) && canImport(CCrypto)
    import CCrypto
    import KeelCore
    #if canImport(Glibc)
        import Glibc
    #elseif canImport(Musl)
        import Musl
    #elseif canImport(Android)
        import Android
    #endif

    /// Nonces for AES-GCM seals out of a buffer of OpenSSL's DRBG output, drawn 4 KiB at a time.
    ///
    /// One `RAND_bytes` call costs microseconds of locking and provider dispatch in OpenSSL 3 whatever its
    /// length — about as much as the seal it is for (keel-bench outbox.enqueue, vault.insert). The bytes
    /// handed out are the same generator's output, each handed out once, so nonces stay as unpredictable
    /// and as unique as when every seal drew its own. Nonces are public (they are stored beside the
    /// ciphertext), so holding the next ones in memory exposes nothing; keys never come from here.
    ///
    /// A forked child would inherit the buffer and seal with the nonces its parent goes on to use: the pool
    /// notes the process id it was filled in and drops the buffer in any other process.
    final class NoncePool: Sendable {
        static let shared = NoncePool()

        private struct State {
            var bytes = [UInt8](repeating: 0, count: NoncePool.size)
            /// Bytes of `bytes` already handed out; all of them until the first fill.
            var used = NoncePool.size
            /// The process that filled `bytes`.
            var process: pid_t = 0
        }

        static let size = 4096
        private let state = Locked(State())

        /// Fills `nonce` (at most 64 bytes) with bytes no seal has used.
        func fill(_ nonce: UnsafeMutableRawBufferPointer) {
            precondition(nonce.count <= 64, "NoncePool: a nonce is at most 64 bytes")
            guard let target = nonce.baseAddress, !nonce.isEmpty else { return }
            let process = getpid()
            state.withLock { state in
                if state.process != process || state.used + nonce.count > Self.size {
                    state.bytes.withUnsafeMutableBytes { OpenSSLAESGCM.fillRandom($0) }
                    state.used = 0
                    state.process = process
                }
                state.bytes.withUnsafeMutableBytes { bytes in
                    let taken = UnsafeMutableRawBufferPointer(rebasing: bytes[state.used..<(state.used + nonce.count)])
                    target.copyMemory(from: taken.baseAddress!, byteCount: nonce.count)
                    // Zeroed once handed out: no byte of a nonce stays where it could be handed out again.
                    taken.initializeMemory(as: UInt8.self, repeating: 0)
                }
                state.used += nonce.count
            }
        }
    }
#endif
