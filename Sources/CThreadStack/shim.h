// The lowest address of the calling thread's stack, which Swift cannot ask for directly on Linux
// (pthread_getattr_np is a GNU extension the Glibc module does not export). Header only, libc only.
// Only KeelCore imports this module (ThreadStack).
#ifndef KEEL_CTHREADSTACK_SHIM_H
#define KEEL_CTHREADSTACK_SHIM_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
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

#endif
