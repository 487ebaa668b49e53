#if canImport(Glibc) || canImport(Musl)
    #if canImport(Glibc)
        import Glibc
    #else
        import Musl
    #endif
    import CThreadStack
    import Synchronization

    /// The operating system's random bytes, fetched 4 KiB at a time and handed out 8 at a time.
    ///
    /// On Linux each `SystemRandomNumberGenerator` draw is a `getrandom` system call (glibc has no vDSO path
    /// before 2.41), and Keel draws several ids per request and per queued change (correlation id, trace and
    /// parent ids, idempotency keys); one `getrandom` per 512 draws removes that cost (keel-bench
    /// `trace.overhead`, `outbox.enqueue`: with 32 draws per call, the kernel's refills still took about 1 %
    /// of a traced request's client time). The bytes are the kernel's CSPRNG output unchanged: every word is
    /// handed out once and wiped from the buffer. A forked child discards what it inherited, so parent and
    /// child never hand out the same bytes. Keys and nonces never come from here (KeelCrypto uses OpenSSL's
    /// generator); on Apple platforms `arc4random` is already in user space and this pool is not compiled.
    enum SystemEntropy {
        private static let words = 512

        private struct Pool {
            var buffer = [UInt64](repeating: 0, count: SystemEntropy.words)
            /// The next unused word; `words` when the buffer is spent.
            var next = SystemEntropy.words
            /// The fork count when the buffer was filled.
            var filledAt: UInt64 = 0
        }

        private static let pool = Locked(Pool())
        /// Bumped in every child a fork makes: a buffer filled before it is not used after it.
        private static let forks = Atomic<UInt64>(0)
        private static let registered: Bool = {
            pthread_atfork(nil, nil) { SystemEntropy.forks.wrappingAdd(1, ordering: .relaxed) } == 0
        }()

        /// The next 64 random bits.
        static func next() -> UInt64 {
            let forkCount = currentForks()
            return pool.withLock { pool in take(&pool, forkCount) }
        }

        /// The next 128 random bits.
        static func nextPair() -> (UInt64, UInt64) {
            let forkCount = currentForks()
            return pool.withLock { pool in (take(&pool, forkCount), take(&pool, forkCount)) }
        }

        private static func currentForks() -> UInt64 {
            _ = registered
            return forks.load(ordering: .relaxed)
        }

        private static func take(_ pool: inout Pool, _ forkCount: UInt64) -> UInt64 {
            if pool.next == words || pool.filledAt != forkCount {
                refill(&pool)
                pool.filledAt = forkCount
            }
            let word = pool.buffer[pool.next]
            pool.buffer[pool.next] = 0
            pool.next += 1
            return word
        }

        private static func refill(_ pool: inout Pool) {
            let filled = pool.buffer.withUnsafeMutableBytes { bytes -> Bool in
                var offset = 0
                while offset < bytes.count {
                    // Above 256 bytes a signal may cut a call short: go on from where it stopped.
                    let count = keel_getrandom(bytes.baseAddress! + offset, bytes.count - offset)
                    if count > 0 {
                        offset += count
                    } else if count < 0, errno == EINTR {
                        continue
                    } else {
                        return false
                    }
                }
                return true
            }
            if !filled {
                // getrandom cannot fail on a working system (Linux 3.17 or later); if it does, the stdlib's
                // generator (which traps rather than return weak bytes) fills the buffer.
                var system = SystemRandomNumberGenerator()
                for index in pool.buffer.indices { pool.buffer[index] = system.next() }
            }
            pool.next = 0
        }
    }
#endif
