#ifndef RECEIPTD_CZLIB_SHIM_H
#define RECEIPTD_CZLIB_SHIM_H
// zlib for Swift: gzip files for `receiptd export-data` (Debian: zlib1g-dev).
#include <zlib.h>
#endif
