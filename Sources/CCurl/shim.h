#ifndef RECEIPTD_CCURL_SHIM_H
#define RECEIPTD_CCURL_SHIM_H
// libcurl for Swift. curl_easy_setopt/getinfo and curl_multi_setopt are variadic macros that
// Swift cannot call, so each argument type gets a typed inline wrapper here.
// https://curl.se/libcurl/c/curl_easy_setopt.html
#include <curl/curl.h>

static inline CURLcode receiptd_curl_easy_setopt_long(CURL *h, CURLoption o, long v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode receiptd_curl_easy_setopt_string(CURL *h, CURLoption o, const char *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode receiptd_curl_easy_setopt_pointer(CURL *h, CURLoption o, void *v) {
    return curl_easy_setopt(h, o, v);
}
static inline CURLcode receiptd_curl_easy_setopt_off_t(CURL *h, CURLoption o, curl_off_t v) {
    return curl_easy_setopt(h, o, v);
}
typedef size_t (*receiptd_curl_write_callback)(char *, size_t, size_t, void *);
static inline CURLcode receiptd_curl_easy_setopt_write_function(CURL *h, CURLoption o, receiptd_curl_write_callback f) {
    return curl_easy_setopt(h, o, f);
}
static inline CURLcode receiptd_curl_easy_getinfo_long(CURL *h, CURLINFO i, long *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode receiptd_curl_easy_getinfo_double(CURL *h, CURLINFO i, double *v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLcode receiptd_curl_easy_getinfo_pointer(CURL *h, CURLINFO i, void **v) {
    return curl_easy_getinfo(h, i, v);
}
static inline CURLMcode receiptd_curl_multi_setopt_long(CURLM *m, CURLMoption o, long v) {
    return curl_multi_setopt(m, o, v);
}
/// The libcurl version string ("8.x.y"), for `receiptd version` and start-up logs.
static inline const char *receiptd_curl_version_number(void) {
    return curl_version_info(CURLVERSION_NOW)->version;
}
#endif
