#ifndef PACKD_CLIBPQ_SHIM_H
#define PACKD_CLIBPQ_SHIM_H
#include <libpq-fe.h>

/* PQresultErrorField's field codes are character-literal macros (postgres_ext.h), which Swift
   does not import: typed constants instead. */
static const int packd_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
static const int packd_pg_diag_message_primary = PG_DIAG_MESSAGE_PRIMARY;
static const int packd_pg_diag_message_detail = PG_DIAG_MESSAGE_DETAIL;
static const int packd_pg_diag_message_hint = PG_DIAG_MESSAGE_HINT;
static const int packd_pg_diag_statement_position = PG_DIAG_STATEMENT_POSITION;
static const int packd_pg_diag_constraint_name = PG_DIAG_CONSTRAINT_NAME;
static const int packd_pg_diag_severity_nonlocalized = PG_DIAG_SEVERITY_NONLOCALIZED;
#endif
