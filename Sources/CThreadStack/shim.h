// Thread and process facts Swift cannot reach on Linux, because they are GNU extensions the Glibc module
// does not export: the lowest address of the calling thread's stack (pthread_getattr_np), CPU affinity
// (sched_getaffinity / sched_setaffinity with the CPU_* macros), the heap in use (mallinfo2) and the
// kernel's random bytes in amounts above getentropy's 256 (getrandom). Header only, libc only. Only
// KeelCore imports this module (ThreadStack, ThreadPlacement, HeapUsage, SystemEntropy).
#ifndef KEEL_CTHREADSTACK_SHIM_H
#define KEEL_CTHREADSTACK_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
// Only headers that do not bring in <sys/select.h>: with _GNU_SOURCE its fd_set would differ from the one
// in Glibc's and Dispatch's modules, and a clean build refuses the mismatch (<sched.h> declares pid_t).
#include <malloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stddef.h>

/// The lowest usable address of the calling thread's stack, or 0 when it cannot be known.
static inline uintptr_t keel_thread_stack_low(void) {
    pthread_attr_t attributes;
    if (pthread_getattr_np(pthread_self(), &attributes) != 0) return 0;
    void *address = NULL;
    size_t size = 0;
    int status = pthread_attr_getstack(&attributes, &address, &size);
    pthread_attr_destroy(&attributes);
    return status == 0 ? (uintptr_t)address : 0;
}

/// The lowest-numbered CPU the calling thread may run on, or -1.
static inline int keel_first_allowed_cpu(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (CPU_ISSET(cpu, &set)) return cpu;
    }
    return -1;
}

/// Lets thread `tid` (0: the calling thread) run only on `cpu`; 0 on success, -1 with errno set otherwise.
static inline int keel_pin_thread(pid_t tid, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(tid, sizeof(set), &set);
}

/// Bytes malloc has handed out and not had back, over all arenas.
static inline size_t keel_heap_in_use(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

/// getrandom(2), declared here rather than through <sys/random.h>, which brings in <sys/select.h> (see the
/// top of this file). Its `ssize_t` is `long` on every 64-bit Linux ABI.
extern long getrandom(void *buffer, size_t length, unsigned int flags);

/// getrandom(2) without flags: up to `length` bytes of the kernel's CSPRNG; the count written, or -1 with
/// errno set.
static inline long keel_getrandom(void *buffer, size_t length) { return getrandom(buffer, length, 0); }

#endif
