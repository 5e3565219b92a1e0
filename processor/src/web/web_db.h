/*
 * web_db.h - the web console's one database session: connected as the role it was given,
 * reconnected when lost, asked what that role may do at every request.
 */
#ifndef PGRELAY_WEB_DB_H
#define PGRELAY_WEB_DB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stddef.h>

#include "buf.h"
#include "web.h"

/* web_db_open connects (one attempt); false with the reason in err. conninfo must outlive it. */
bool web_db_open(const char *conninfo, char *err, size_t errlen) MUSTCHECK;
void web_db_close(void);

/*
 * web_db_caps fills caps for this request, reconnecting first if the session was lost; false
 * (with web_db_error()) when the database cannot be reached or read.
 */
bool web_db_caps(struct WebCaps *caps) MUSTCHECK;

/* web_db_query runs sql with its values as text parameters; NULL on failure (web_db_error()). */
PGresult *web_db_query(const char *sql, int n, const char *const *values) MUSTCHECK;
const char *web_db_error(void);
/* web_db_hint is the HINT of the last failure ("" for none): what the database says to do instead. */
const char *web_db_hint(void);
const char *web_db_sqlstate(void);
void web_db_clear(PGresult *res);

/* web_db_value is a field's text, "" for NULL; web_db_null tells NULL apart; web_db_rows counts. */
const char *web_db_value(const PGresult *res, int row, int col);
bool web_db_null(const PGresult *res, int row, int col);
bool web_db_flag(const PGresult *res, int row, int col);
int web_db_rows(const PGresult *res);

#endif
