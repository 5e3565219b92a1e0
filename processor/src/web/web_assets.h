/*
 * web_assets.h - the web console's style sheet and script, built into the binary: no files to
 * install, no build step, nothing fetched from elsewhere.
 */
#ifndef PGRELAY_WEB_ASSETS_H
#define PGRELAY_WEB_ASSETS_H

#include <stddef.h>

struct WebAsset {
	const char *path;         /* "/static/console.css" */
	const char *content_type; /* with its charset */
	const char *body;
};

/* web_asset returns the asset served at path, or NULL. */
const struct WebAsset *web_asset(const char *path);

#endif
