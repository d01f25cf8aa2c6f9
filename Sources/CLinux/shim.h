#ifndef RECEIPTD_CEPOLL_SHIM_H
#define RECEIPTD_CEPOLL_SHIM_H
// Linux APIs that Glibc's Swift module does not export: epoll(7), eventfd(2) and accept4(2)
// (a GNU extension). Header-only; HTTPServer's only C dependency.
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <stdint.h>

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
#endif
