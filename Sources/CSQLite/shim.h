#ifndef RECEIPTD_CSQLITE_SHIM_H
#define RECEIPTD_CSQLITE_SHIM_H
// SQLite for Swift. SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot
// import, and sqlite3_config is variadic; both get a typed wrapper here.
// https://www.sqlite.org/c3ref/c_static.html
#include <sqlite3.h>

/// Binds `n` bytes of UTF-8 text that SQLite copies before returning (SQLITE_TRANSIENT); an
/// empty string's pointer may be null, and is still the empty string, not NULL.
static inline int receiptd_sqlite3_bind_text_transient(sqlite3_stmt *s, int i, const unsigned char *v, int n) {
    return sqlite3_bind_text(s, i, v ? (const char *)v : "", n, SQLITE_TRANSIENT);
}
/// Binds a blob that SQLite copies before returning (SQLITE_TRANSIENT).
static inline int receiptd_sqlite3_bind_blob_transient(sqlite3_stmt *s, int i, const void *v, int n) {
    return sqlite3_bind_blob(s, i, v, n, SQLITE_TRANSIENT);
}

// A statement's or savepoint's journal kept in memory is one chunk of the spill size, written to
// its temporary file in one call when it spills; the unix VFS writes at most 0x1ffff bytes a call
// (seekAndWriteFd masks the length), so with a spill size of 128 KiB or more SQLite 3.40 reports
// that write as short: SQLITE_FULL, "database or disk is full". The default VFS is therefore
// wrapped (a shim VFS, https://www.sqlite.org/vfs.html): statement journals' files
// (SQLITE_OPEN_SUBJOURNAL) are written through pieces of 64 KiB; every other file is the unix
// VFS's own, untouched.

/// A statement journal's file: the unix VFS's file after this header.
typedef struct receiptd_piecewise_file {
    sqlite3_file base;
    sqlite3_file *real;
} receiptd_piecewise_file;

// Swift imports functions of a header, not its variables: the state lives in functions' statics.
/// The unix VFS the shim forwards to.
static inline sqlite3_vfs **receiptd_unix_vfs(void) {
    static sqlite3_vfs *unix_vfs;
    return &unix_vfs;
}
#define RECEIPTD_REAL(f) (((receiptd_piecewise_file *)(f))->real)
#define RECEIPTD_PIECE 65536

static inline int receiptd_pw_close(sqlite3_file *f) {
    sqlite3_file *real = RECEIPTD_REAL(f);
    return real->pMethods ? real->pMethods->xClose(real) : SQLITE_OK;
}
static inline int receiptd_pw_read(sqlite3_file *f, void *buf, int amount, sqlite3_int64 offset) {
    return RECEIPTD_REAL(f)->pMethods->xRead(RECEIPTD_REAL(f), buf, amount, offset);
}
static inline int receiptd_pw_write(sqlite3_file *f, const void *buf, int amount, sqlite3_int64 offset) {
    sqlite3_file *real = RECEIPTD_REAL(f);
    const char *bytes = (const char *)buf;
    while (amount > 0) {
        int piece = amount < RECEIPTD_PIECE ? amount : RECEIPTD_PIECE;
        int rc = real->pMethods->xWrite(real, bytes, piece, offset);
        if (rc != SQLITE_OK) return rc;
        bytes += piece;
        offset += piece;
        amount -= piece;
    }
    return SQLITE_OK;
}
static inline int receiptd_pw_truncate(sqlite3_file *f, sqlite3_int64 size) {
    return RECEIPTD_REAL(f)->pMethods->xTruncate(RECEIPTD_REAL(f), size);
}
static inline int receiptd_pw_sync(sqlite3_file *f, int flags) {
    return RECEIPTD_REAL(f)->pMethods->xSync(RECEIPTD_REAL(f), flags);
}
static inline int receiptd_pw_file_size(sqlite3_file *f, sqlite3_int64 *size) {
    return RECEIPTD_REAL(f)->pMethods->xFileSize(RECEIPTD_REAL(f), size);
}
static inline int receiptd_pw_lock(sqlite3_file *f, int level) {
    return RECEIPTD_REAL(f)->pMethods->xLock(RECEIPTD_REAL(f), level);
}
static inline int receiptd_pw_unlock(sqlite3_file *f, int level) {
    return RECEIPTD_REAL(f)->pMethods->xUnlock(RECEIPTD_REAL(f), level);
}
static inline int receiptd_pw_check_reserved_lock(sqlite3_file *f, int *out) {
    return RECEIPTD_REAL(f)->pMethods->xCheckReservedLock(RECEIPTD_REAL(f), out);
}
static inline int receiptd_pw_file_control(sqlite3_file *f, int op, void *arg) {
    return RECEIPTD_REAL(f)->pMethods->xFileControl(RECEIPTD_REAL(f), op, arg);
}
static inline int receiptd_pw_sector_size(sqlite3_file *f) {
    return RECEIPTD_REAL(f)->pMethods->xSectorSize(RECEIPTD_REAL(f));
}
static inline int receiptd_pw_device_characteristics(sqlite3_file *f) {
    return RECEIPTD_REAL(f)->pMethods->xDeviceCharacteristics(RECEIPTD_REAL(f));
}

/// Version 1 methods: a statement journal is a private temporary file (no shared memory, no mmap).
static inline const sqlite3_io_methods *receiptd_piecewise_methods(void) {
    static const sqlite3_io_methods methods = {
        1, receiptd_pw_close, receiptd_pw_read, receiptd_pw_write, receiptd_pw_truncate, receiptd_pw_sync,
        receiptd_pw_file_size, receiptd_pw_lock, receiptd_pw_unlock, receiptd_pw_check_reserved_lock,
        receiptd_pw_file_control, receiptd_pw_sector_size, receiptd_pw_device_characteristics,
    };
    return &methods;
}

static inline int receiptd_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags, int *out) {
    (void)vfs;
    sqlite3_vfs *unix_vfs = *receiptd_unix_vfs();
    if (!(flags & SQLITE_OPEN_SUBJOURNAL)) return unix_vfs->xOpen(unix_vfs, name, file, flags, out);
    receiptd_piecewise_file *wrapper = (receiptd_piecewise_file *)file;
    wrapper->real = (sqlite3_file *)&wrapper[1];
    wrapper->base.pMethods = 0;
    int rc = unix_vfs->xOpen(unix_vfs, name, wrapper->real, flags, out);
    if (rc == SQLITE_OK) wrapper->base.pMethods = receiptd_piecewise_methods();
    return rc;
}

/// Sets the size past which a statement's or a savepoint's journal spills from memory into a
/// temporary file (SQLITE_CONFIG_STMTJRNL_SPILL), then makes the shim above the default VFS;
/// only before SQLite initializes. SQLITE_OK, or the first error.
/// https://www.sqlite.org/c3ref/c_config_covering_index_scan.html#sqliteconfigstmtjrnlspill
static inline int receiptd_sqlite3_configure(int spill) {
    int rc = sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL, spill);
    if (rc != SQLITE_OK) return rc;
    static sqlite3_vfs shim;
    sqlite3_vfs *unix_vfs = sqlite3_vfs_find(0);
    if (!unix_vfs) return SQLITE_ERROR;
    *receiptd_unix_vfs() = unix_vfs;
    shim = *unix_vfs;
    shim.zName = "receiptd-piecewise";
    shim.szOsFile = (int)sizeof(receiptd_piecewise_file) + unix_vfs->szOsFile;
    shim.xOpen = receiptd_vfs_open;
    shim.pNext = 0;
    return sqlite3_vfs_register(&shim, 1);
}
#endif
