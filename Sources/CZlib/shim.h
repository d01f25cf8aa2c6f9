#ifndef RECEIPTD_CZLIB_SHIM_H
#define RECEIPTD_CZLIB_SHIM_H
// zlib for Swift: gzip files for `receiptd export-data`, bytes kept compressed (Debian: zlib1g-dev).
#include <zlib.h>

/// deflateInit2, a macro Swift cannot import: the zlib format (RFC 1950) at `level`, with a window
/// of 2^`windowBits` bytes and `memLevel`'s hash table. https://zlib.net/manual.html#Advanced
static inline int receiptd_deflate_init(z_stream *stream, int level, int windowBits, int memLevel) {
    return deflateInit2(stream, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}
#endif
