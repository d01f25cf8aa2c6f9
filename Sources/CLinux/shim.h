#ifndef RECEIPTD_CEPOLL_SHIM_H
#define RECEIPTD_CEPOLL_SHIM_H
// Linux APIs that Glibc's Swift module does not export: epoll(7), eventfd(2), accept4(2) (a GNU
// extension) and a thread's own nice value (gettid(2)). Header-only.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <stdint.h>
#include <unistd.h>

extern int accept4(int sockfd, struct sockaddr *addr, socklen_t *addrlen, int flags);

static const uint32_t receiptd_EPOLLIN = EPOLLIN;
static const uint32_t receiptd_EPOLLOUT = EPOLLOUT;
static const uint32_t receiptd_EPOLLERR = EPOLLERR;
static const uint32_t receiptd_EPOLLHUP = EPOLLHUP;
static const uint32_t receiptd_EPOLLRDHUP = EPOLLRDHUP;
static const uint32_t receiptd_EPOLLEXCLUSIVE = EPOLLEXCLUSIVE;
static const int receiptd_EPOLL_CLOEXEC = EPOLL_CLOEXEC;
static const int receiptd_EFD_NONBLOCK = EFD_NONBLOCK;
static const int receiptd_EFD_CLOEXEC = EFD_CLOEXEC;

// Sets the calling thread's nice value (Linux keeps one per thread, setpriority(2)): 0 on
// success, -1 and errno otherwise. Raising it (a lower priority) needs no privilege.
static inline int receiptd_set_thread_nice(int nice) {
    return setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), nice);
}

// The calling thread's nice value.
static inline int receiptd_thread_nice(void) {
    return getpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid));
}
#endif
