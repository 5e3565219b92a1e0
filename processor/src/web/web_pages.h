/*
 * web_pages.h - the pages and actions of the web console, in one table: a page renders what the
 * connected role may read (GET), an action asks the database to do one thing (POST). A page for
 * a new view (schedules, deduplication keys) is one more row and one more pages_*.c file.
 */
#ifndef PGRELAY_WEB_PAGES_H
#define PGRELAY_WEB_PAGES_H

#include <stdbool.h>

#include "web.h"

struct WebPage {
	const char *path;  /* exact path: "/", "/events" */
	const char *title; /* the navigation's label and the page's heading */
	bool in_nav;       /* listed in the navigation */
	bool post;         /* an action: POST only, with the CSRF token and a same-origin Origin */
	void (*render)(struct WebReq *r);
};

/* The table, ended by a row whose path is NULL. */
extern const struct WebPage web_pages[];

/* web_page_find returns the row of path, or NULL. */
const struct WebPage *web_page_find(const char *path);

void page_overview(struct WebReq *r);
void page_channels(struct WebReq *r);
void page_events(struct WebReq *r);
void page_event(struct WebReq *r);
void page_failures(struct WebReq *r);
void page_processors(struct WebReq *r);
void page_schedules(struct WebReq *r);
void page_topics(struct WebReq *r);
void action_retry(struct WebReq *r);
void action_discard(struct WebReq *r);
void action_retry_set(struct WebReq *r);
void action_discard_set(struct WebReq *r);
void action_pause(struct WebReq *r);
void action_resume(struct WebReq *r);
void action_cancel(struct WebReq *r);
void action_schedule_pause(struct WebReq *r);
void action_schedule_resume(struct WebReq *r);
/*
 * action_sign_out ends the request's sign-in (server.c): a session's cookie is closed and cleared;
 * with HTTP Basic the answer is 401, which makes a browser forget the password it sent.
 */
void action_sign_out(struct WebReq *r);

/* web_cancel_text says what an answer of pgrelay.cancel() (cancelled, running, finished) means. */
const char *web_cancel_text(const char *answer);

#endif
