#ifndef PACKD_CSQLITE_SHIM_H
#define PACKD_CSQLITE_SHIM_H
#include <sqlite3.h>

/* sqlite3_db_config is variadic; these typed wrappers are what Swift can call. */
static inline int packd_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *out) {
    return sqlite3_db_config(db, op, value, out);
}
/* SQLITE_TRANSIENT as a function pointer Swift can pass without unsafeBitCast at every call. */
static inline sqlite3_destructor_type packd_sqlite3_transient(void) { return SQLITE_TRANSIENT; }
#endif
