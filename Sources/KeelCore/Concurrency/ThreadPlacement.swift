import Foundation

#if canImport(CThreadStack)
    import CThreadStack
#endif

/// Where this process's threads may run, for measurements (keel-bench), not for apps.
package enum ThreadPlacement {
    /// Lets every thread of this process — those running now and, by inheritance, those made later — run
    /// on one CPU only: the lowest one it may use now. Round trips between two threads of one process (a
    /// client and a loopback server) then cost the same same-core switch on every run, instead of whatever
    /// the scheduler's placement of the threads on the machine's cores makes them cost.
    ///
    /// - Returns: whether every thread was pinned; false where the platform has no affinity call.
    @discardableResult
    package static func pinAllThreadsToOneCPU() -> Bool {
        #if canImport(CThreadStack)
            let cpu = keel_first_allowed_cpu()
            guard cpu >= 0 else { return false }
            // The calling thread first: threads it makes from now on inherit the pin.
            guard keel_pin_thread(0, cpu) == 0 else { return false }
            let threads = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
            var pinned = true
            for thread in threads.compactMap({ pid_t($0) }) where keel_pin_thread(thread, cpu) != 0 {
                if errno != ESRCH { pinned = false }  // a thread that ended meanwhile needs no pin
            }
            return pinned
        #else
            return false
        #endif
    }
}

/// How much of the heap this process uses now, for tests that prove something is freed (not for apps).
package enum HeapUsage {
    /// Bytes malloc has handed out and not had back, over all arenas; nil where the platform cannot say.
    package static func bytesInUse() -> Int? {
        #if canImport(CThreadStack)
            return Int(keel_heap_in_use())
        #else
            return nil
        #endif
    }
}
