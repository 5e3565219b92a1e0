/*
 * pages.c - the table of the web console's pages and actions (web_pages.h).
 */
#include "web_pages.h"

#include <string.h>

const struct WebPage web_pages[] = {
	{"/", "Overview", true, false, page_overview},
	{"/channels", "Channels", true, false, page_channels},
	{"/events", "Events", true, false, page_events},
	{"/failures", "Failures", true, false, page_failures},
	{"/schedules", "Schedules", true, false, page_schedules},
	{"/topics", "Topics", true, false, page_topics},
	{"/processors", "Processors", true, false, page_processors},
	{"/event", "Event", false, false, page_event},
	{"/action/retry", "Retry", false, true, action_retry},
	{"/action/discard", "Discard", false, true, action_discard},
	{"/action/retry-failed", "Retry failures", false, true, action_retry_set},
	{"/action/discard-failed", "Discard failures", false, true, action_discard_set},
	{"/action/pause", "Pause", false, true, action_pause},
	{"/action/resume", "Resume", false, true, action_resume},
	{"/action/cancel", "Cancel", false, true, action_cancel},
	{"/action/schedule-pause", "Pause schedule", false, true, action_schedule_pause},
	{"/action/schedule-resume", "Resume schedule", false, true, action_schedule_resume},
	{"/sign-out", "Sign out", false, true, action_sign_out},
	{NULL, NULL, false, false, NULL},
};

const struct WebPage *
web_page_find(const char *path)
{
	const struct WebPage *p;

	for (p = web_pages; p->path != NULL; p++)
		if (strcmp(p->path, path) == 0)
			return p;
	return NULL;
}
