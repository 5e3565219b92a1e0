/*
 * web_html.h - the HTML of the web console's pages: escaping, the frame every page shares (head,
 * navigation, who is connected), and the small pieces pages repeat (notices, ages, forms).
 */
#ifndef PGRELAY_WEB_HTML_H
#define PGRELAY_WEB_HTML_H

#include <stdbool.h>

#include "buf.h"
#include "web.h"

/* html_esc appends s with & < > " ' escaped (NULL appends nothing). */
void html_esc(struct Buf *b, const char *s);
/* html_esc_cut is html_esc of at most max bytes of s (cut at a character boundary, marked "…"). */
void html_esc_cut(struct Buf *b, const char *s, size_t max);
/* url_esc appends s %-encoded for a query string value. */
void url_esc(struct Buf *b, const char *s);
/* html_age appends a duration of seconds as "42s", "3m05s", "2h10m", "4d03h" ("-" when < 0). */
void html_age(struct Buf *b, double secs);

/*
 * html_last_error appends a channel's last error (pgrelay.last_errors): how long ago, linked to its
 * event, the kind and SQLSTATE when there is one (sqlstate NULL: none), and the error cut to fit.
 */
void html_last_error(struct Buf *b, double ago, const char *event_id, const char *kind, const char *sqlstate,
					 const char *error);
/*
 * html_duration appends a setting's duration of seconds in words: "250 ms", "10 s", "1.5 s",
 * "1 min 30 s", "1 h", "2 d 12 h" ("-" when < 0).
 */
void html_duration(struct Buf *b, double secs);

/*
 * html_begin opens a page: the head, the navigation with `nav` (a path of the page table)
 * marked current, who is connected and what the role may do. refresh: the page refreshes itself
 * every few seconds when the reader ticks the box (with JavaScript).
 */
void html_begin(struct WebReq *r, const char *title, const char *nav, bool refresh);
void html_end(struct WebReq *r);

/* html_notice appends a box: kind "info", "warn" or "denied", the text escaped. */
void html_notice(struct WebReq *r, const char *kind, const char *text);
/*
 * html_denied says what the connected role may not read or do, and which role may: the
 * database's decision, shown instead of what it refused.
 */
void html_denied(struct WebReq *r, const char *what, const char *who);
/* html_db_error shows a statement's failure (the database's message) in place of its section. */
void html_db_error(struct WebReq *r, const char *what);

/*
 * html_form_begin opens a POST form to action with the CSRF token; html_hidden adds a field.
 * html_button closes it with a button, marked "denied" when the role may not (the database
 * refuses it anyway).
 */
void html_form_begin(struct WebReq *r, const char *action, const char *confirm);
void html_hidden(struct WebReq *r, const char *name, const char *value);
void html_button(struct WebReq *r, const char *label, bool allowed, const char *cls);

/* The page a request renders when nothing else is there: status and one line. */
void html_message_page(struct WebReq *r, unsigned status, const char *title, const char *text);

#endif
