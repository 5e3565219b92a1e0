/*
 * html.c - escaping and the frame of the web console's pages. Everything that comes from the
 * database or the request goes through html_esc or url_esc; the pages write only their own
 * markup as it is.
 */
#include "web_html.h"

#include <stdio.h>
#include <string.h>

#include "web_db.h"
#include "web_pages.h"

void
html_esc(struct Buf *b, const char *s)
{
	const char *p, *start;

	if (s == NULL)
		return;
	for (p = start = s; *p; p++) {
		const char *rep = NULL;

		switch (*p) {
		case '&':
			rep = "&amp;";
			break;
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		default:
			continue;
		}
		buf_append(b, start, (size_t) (p - start));
		buf_puts(b, rep);
		start = p + 1;
	}
	buf_append(b, start, (size_t) (p - start));
}

void
html_esc_cut(struct Buf *b, const char *s, size_t max)
{
	struct Buf cut = BUF_INIT;
	size_t n;

	if (s == NULL)
		return;
	n = strlen(s);
	if (n <= max) {
		html_esc(b, s);
		return;
	}
	/* back up to the first byte of a UTF-8 character */
	while (max > 0 && ((unsigned char) s[max] & 0xC0) == 0x80)
		max--;
	buf_append(&cut, s, max);
	html_esc(b, cut.data ? cut.data : "");
	buf_puts(b, "\xE2\x80\xA6");
	buf_free(&cut);
}

void
url_esc(struct Buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;

	for (p = (const unsigned char *) s; p && *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
			*p == '_' || *p == '.' || *p == '~')
			buf_putc(b, (char) *p);
		else
			buf_printf(b, "%%%c%c", hex[*p >> 4], hex[*p & 15]);
	}
}

void
html_age(struct Buf *b, double secs)
{
	long long s = (long long) secs;

	if (secs < 0)
		buf_puts(b, "-");
	else if (s < 60)
		buf_printf(b, "%llds", s);
	else if (s < 3600)
		buf_printf(b, "%lldm%02llds", s / 60, s % 60);
	else if (s < 86400)
		buf_printf(b, "%lldh%02lldm", s / 3600, s % 3600 / 60);
	else
		buf_printf(b, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
}

void
html_duration(struct Buf *b, double secs)
{
	static const struct {
		long long ms;
		const char *unit;
	} units[] = {{86400000, "d"}, {3600000, "h"}, {60000, "min"}};
	long long ms = (long long) (secs * 1000 + 0.5);
	const char *sep = "";
	size_t i;

	if (secs < 0) {
		buf_puts(b, "-");
		return;
	}
	if (ms < 1000) {
		buf_printf(b, "%lld ms", ms);
		return;
	}
	for (i = 0; i < sizeof units / sizeof units[0]; i++) {
		if (ms < units[i].ms)
			continue;
		buf_printf(b, "%s%lld %s", sep, ms / units[i].ms, units[i].unit);
		ms %= units[i].ms;
		sep = " ";
	}
	if (ms % 1000 != 0) {
		long long frac = ms % 1000;
		int digits = frac % 10 != 0 ? 3 : frac % 100 != 0 ? 2 : 1;

		/* the fraction without its trailing zeros: 1.5 s, 1.25 s */
		buf_printf(b, "%s%lld.%0*lld s", sep, ms / 1000, digits,
				   frac / (digits == 3   ? 1
						   : digits == 2 ? 10
										 : 100));
	} else if (ms > 0)
		buf_printf(b, "%s%lld s", sep, ms / 1000);
}

/* role_label says what kind of role is connected, in the header. */
static const char *
role_label(const struct WebCaps *c)
{
	if (c->admin)
		return "pgrelay_admin";
	if (c->monitor)
		return "pgrelay_monitor";
	return "no pg_relay role";
}

void
html_begin(struct WebReq *r, const char *title, const char *nav, bool refresh)
{
	struct Buf *b = &r->out;
	const struct WebPage *p;

	buf_puts(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
				"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>");
	html_esc(b, title);
	buf_puts(b, " \xC2\xB7 pg_relay</title><link rel=\"stylesheet\" href=\"/static/console.css\">"
				"<link rel=\"icon\" href=\"/static/icon.svg\" type=\"image/svg+xml\">"
				"<script src=\"/static/console.js\" defer></script></head>\n");
	buf_printf(b, "<body data-refresh=\"%d\"><header><a class=\"brand\" href=\"/\">pg_relay</a><nav>",
			   refresh ? 1 : 0);
	for (p = web_pages; p->path != NULL; p++) {
		if (!p->in_nav)
			continue;
		buf_printf(b, "<a href=\"%s\"%s>", p->path,
				   nav && strcmp(nav, p->path) == 0 ? " class=\"current\"" : "");
		html_esc(b, p->title);
		buf_puts(b, "</a>");
	}
	buf_puts(b, "</nav><span class=\"who\" id=\"who\">");
	if (r->caps.ok) {
		buf_puts(b, "role <b>");
		html_esc(b, r->caps.role);
		buf_printf(b, "</b> (%s) on <b>", role_label(&r->caps));
		html_esc(b, r->caps.database);
		buf_puts(b, "</b>");
		if (r->caps.standby)
			buf_puts(b, " <span class=\"tag warn\">standby</span>");
	}
	if (r->user) {
		buf_puts(b, " \xC2\xB7 signed in as ");
		html_esc(b, r->user);
	}
	/* a sign-out for whoever signed in: a POST with the CSRF token, as every action */
	if (r->user || r->session) {
		buf_printf(b,
				   " <form class=\"action\" method=\"post\" action=\"/sign-out\"><input type=\"hidden\" "
				   "name=\"csrf\" value=\"%s\"><input type=\"hidden\" name=\"n\" value=\"%s\">"
				   "<button type=\"submit\" class=\"signout\" id=\"sign-out\">Sign out</button></form>",
				   r->csrf, r->nonce);
	}
	buf_puts(b, "</span></header>\n<main>\n<h1>");
	html_esc(b, title);
	buf_puts(b, "</h1>\n");
}

void
html_end(struct WebReq *r)
{
	buf_printf(
		&r->out,
		"</main>\n<footer>pg_relay %s \xC2\xB7 times are UTC \xC2\xB7 "
		"<label class=\"js-only\"><input type=\"checkbox\" id=\"autorefresh\"> refresh every 5 s</label>"
		"</footer>\n</body></html>\n",
		PGRELAY_VERSION);
}

void
html_notice(struct WebReq *r, const char *kind, const char *text)
{
	buf_printf(&r->out, "<p class=\"notice %s\">", kind);
	html_esc(&r->out, text);
	buf_puts(&r->out, "</p>\n");
}

void
html_denied(struct WebReq *r, const char *what, const char *who)
{
	buf_puts(&r->out, "<p class=\"notice denied\">Your role (");
	html_esc(&r->out, r->caps.role);
	buf_puts(&r->out, ") may not ");
	html_esc(&r->out, what);
	buf_puts(&r->out, ": the database keeps that for ");
	html_esc(&r->out, who);
	buf_puts(&r->out, ".</p>\n");
}

void
html_db_error(struct WebReq *r, const char *what)
{
	buf_puts(&r->out, "<p class=\"notice warn\">");
	html_esc(&r->out, what);
	buf_puts(&r->out, ": ");
	html_esc(&r->out, web_db_error());
	buf_puts(&r->out, "</p>\n");
}

void
html_form_begin(struct WebReq *r, const char *action, const char *confirm)
{
	buf_printf(&r->out, "<form class=\"action\" method=\"post\" action=\"%s\"", action);
	if (confirm) {
		buf_puts(&r->out, " data-confirm=\"");
		html_esc(&r->out, confirm);
		buf_puts(&r->out, "\"");
	}
	buf_printf(&r->out, "><input type=\"hidden\" name=\"csrf\" value=\"%s\">", r->csrf);
}

void
html_hidden(struct WebReq *r, const char *name, const char *value)
{
	buf_printf(&r->out, "<input type=\"hidden\" name=\"%s\" value=\"", name);
	html_esc(&r->out, value ? value : "");
	buf_puts(&r->out, "\">");
}

void
html_button(struct WebReq *r, const char *label, bool allowed, const char *cls)
{
	buf_printf(&r->out, "<button type=\"submit\" class=\"%s%s\"%s>", cls ? cls : "", allowed ? "" : " denied",
			   allowed ? "" : " title=\"your role may not: the database will refuse it\"");
	html_esc(&r->out, label);
	buf_puts(&r->out, "</button></form>");
}

void
html_message_page(struct WebReq *r, unsigned status, const char *title, const char *text)
{
	buf_reset(&r->out);
	r->status = status;
	html_begin(r, title, NULL, false);
	html_notice(r, status >= 400 ? "warn" : "info", text);
	buf_puts(&r->out, "<p><a href=\"/\">Overview</a></p>\n");
	html_end(r);
}

void
html_last_error(struct Buf *b, double ago, const char *event_id, const char *kind, const char *sqlstate,
				const char *error)
{
	buf_printf(b, "<a href=\"/event?id=%s\">", event_id);
	html_age(b, ago);
	buf_puts(b, " ago</a> ");
	if (sqlstate != NULL) {
		buf_puts(b, "<span class=\"tag\">");
		html_esc(b, kind);
		buf_puts(b, " ");
		html_esc(b, sqlstate);
		buf_puts(b, "</span> ");
	}
	html_esc_cut(b, error, 160);
}
