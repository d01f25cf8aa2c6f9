#ifndef RECEIPTD_CPOSTGRESQL_SHIM_H
#define RECEIPTD_CPOSTGRESQL_SHIM_H
// libpq, PostgreSQL's C client (Debian's libpq-dev puts it under /usr/include/postgresql).
// https://www.postgresql.org/docs/15/libpq.html
#include <postgresql/libpq-fe.h>
#endif
