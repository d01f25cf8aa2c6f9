#ifndef RECEIPTD_CSQLITE_SHIM_H
#define RECEIPTD_CSQLITE_SHIM_H
// SQLite for Swift. SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
// import, and sqlite3_config is variadic; both get a typed wrapper here.
// https://www.sqlite.org/c3ref/c_static.html
#include <sqlite3.h>

/// Binds text that SQLite copies before returning (SQLITE_TRANSIENT).
static inline int receiptd_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const char *v, int n) {
    return sqlite3_bind_text(s, i, v, n, SQLITE_TRANSIENT);
}
/// Binds a blob that SQLite copies before returning (SQLITE_TRANSIENT).
static inline int receiptd_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *v, int n) {
    return sqlite3_bind_blob(s, i, v, n, SQLITE_TRANSIENT);
}
/// Sets the size past which a statement's or a savepoint's journal spills from memory into a
/// temporary file (SQLITE_CONFIG_STMTJRNL_SPILL); only before SQLite initializes.
/// https://www.sqlite.org/c3ref/c_config_covering_index_scan.html#sqliteconfigstmtjrnlspill
static inline int receiptd_sqlite3_config_stmtjrnl_spill(int bytes) {
    return sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, bytes);
}
#endif
