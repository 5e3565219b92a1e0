/*
 * ratelimit.c - a ring of the last N send times per profile, behind one mutex.
 */
#include "ratelimit.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

#define WINDOW_MS 60000LL

struct Window {
	char *profile;
	int rate;        /* N: sends allowed per window */
	long long *sent; /* ring of the last rate send times */
	int head;        /* oldest entry */
	int count;
	struct Window *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct Window *windows;

/* find_window returns the profile's window, (re)made when the rate changed; NULL on OOM. */
static struct Window *
find_window(const char *profile, int rate)
{
	struct Window *w;

	for (w = windows; w; w = w->next)
		if (strcmp(w->profile, profile) == 0)
			break;
	if (w != NULL && w->rate != rate) {
		/* A new limit starts afresh: keeping old sends would need resizing for little gain. */
		free(w->sent);
		w->sent = calloc((size_t) rate, sizeof *w->sent);
		w->rate = rate;
		w->head = w->count = 0;
		return w->sent ? w : NULL;
	}
	if (w != NULL)
		return w;
	w = calloc(1, sizeof *w);
	if (w == NULL)
		return NULL;
	w->profile = strdup(profile);
	w->sent = calloc((size_t) rate, sizeof *w->sent);
	w->rate = rate;
	if (w->profile == NULL || w->sent == NULL) {
		free(w->profile);
		free(w->sent);
		free(w);
		return NULL;
	}
	w->next = windows;
	windows = w;
	return w;
}

long
ratelimit_acquire(const char *profile, int per_minute, long long now_ms)
{
	struct Window *w;
	long wait = 0;

	if (per_minute <= 0)
		return 0;
	pthread_mutex_lock(&mu);
	w = find_window(profile, per_minute);
	if (w == NULL) {
		wait = 1000; /* out of memory: come back later rather than exceed the limit */
	} else if (w->count < w->rate) {
		w->sent[(w->head + w->count) % w->rate] = now_ms;
		w->count++;
	} else if (w->sent[w->head] + WINDOW_MS <= now_ms) {
		/* The oldest send left the window: its slot is ours. */
		w->sent[w->head] = now_ms;
		w->head = (w->head + 1) % w->rate;
	} else {
		wait = (long) (w->sent[w->head] + WINDOW_MS - now_ms);
	}
	pthread_mutex_unlock(&mu);
	if (wait > 0)
		metrics_ratelimit_wait(profile, wait);
	return wait;
}

void
ratelimit_free(void)
{
	struct Window *w, *next;

	pthread_mutex_lock(&mu);
	for (w = windows; w; w = next) {
		next = w->next;
		free(w->profile);
		free(w->sent);
		free(w);
	}
	windows = NULL;
	pthread_mutex_unlock(&mu);
}
