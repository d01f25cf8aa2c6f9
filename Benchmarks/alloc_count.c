// Counts a process's heap allocations, for the benchmarks' "allocations per POST":
//   gcc -O2 -shared -fPIC -o alloc_count.so Benchmarks/alloc_count.c -ldl -lpthread
//   LD_PRELOAD=alloc_count.so ALLOC_COUNT_FILE=/tmp/x receiptd serve …
// Every malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign is counted (an atomic
// add, then glibc's own); a thread writes the count, in decimal, to ALLOC_COUNT_FILE every 50 ms,
// with write(2) and rename(2) only, so that reading the file twice around a load gives the allocations it made.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic uint64_t count;

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

void *malloc(size_t n) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t size) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return __libc_calloc(n, size);
}

void *realloc(void *p, size_t n) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return __libc_realloc(p, n);
}

void *memalign(size_t alignment, size_t n) {
    atomic_fetch_add_explicit(&count, 1, memory_order_relaxed);
    return __libc_memalign(alignment, n);
}

void *aligned_alloc(size_t alignment, size_t n) { return memalign(alignment, n); }

int posix_memalign(void **out, size_t alignment, size_t n) {
    void *p = memalign(alignment, n);
    if (!p) return 12;  // ENOMEM
    *out = p;
    return 0;
}

static char temporary[4096];

static void *reporter(void *path) {
    char text[32];
    struct timespec pause = {0, 50 * 1000 * 1000};
    for (;;) {
        uint64_t n = atomic_load_explicit(&count, memory_order_relaxed);
        int len = 0;
        char digits[24];
        do { digits[len++] = (char)('0' + n % 10); n /= 10; } while (n);
        for (int i = 0; i < len; i++) text[i] = digits[len - 1 - i];
        text[len] = '\n';
        // Whole or not at all: written beside it, then renamed over it.
        int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            (void)!write(fd, text, (size_t)len + 1);
            close(fd);
            rename(temporary, (const char *)path);
        }
        nanosleep(&pause, NULL);
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *path = getenv("ALLOC_COUNT_FILE");
    if (!path || !*path || strlen(path) + 5 > sizeof temporary) return;
    strcpy(temporary, path);
    strcat(temporary, ".tmp");
    pthread_t thread;
    pthread_create(&thread, NULL, reporter, (void *)path);
    pthread_detach(thread);
}
