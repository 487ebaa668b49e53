// Thin C wrappers for the parts of SQLite's API that Swift cannot call directly:
// macros (SQLITE_TRANSIENT, SQLITE_STATIC) and variadic functions (sqlite3_db_config).
// Only KeelStore imports this module.
#ifndef KEEL_CSQLITE_SHIM_H
#define KEEL_CSQLITE_SHIM_H

#include <sqlite3.h>

/// Destructor telling SQLite to copy bound text/blob before the call returns.
static inline sqlite3_destructor_type keel_sqlite3_transient(void) {
    return SQLITE_TRANSIENT;
}

/// Destructor telling SQLite the bound buffer outlives the statement.
static inline sqlite3_destructor_type keel_sqlite3_static(void) {
    return SQLITE_STATIC;
}

/// `sqlite3_db_config` for the integer on/off options (SQLITE_DBCONFIG_ENABLE_FKEY, _DEFENSIVE, ...).
/// Writes the resulting setting to `*result` when it is not NULL.
static inline int keel_sqlite3_db_config_int(sqlite3 *db, int op, int value, int *result) {
    return sqlite3_db_config(db, op, value, result);
}

#endif
