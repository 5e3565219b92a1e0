/*
 * assets.c - the style sheet and the script of the web console. The pages read without the
 * script: it only refreshes a page every 5 s (unless the reader unticks the box, or types in a form,
 * or looks at another tab) and asks before a set action.
 */
#include "web_assets.h"

#include <string.h>

static const char css[] =
	":root{--fg:#1d2430;--muted:#5d6b7e;--line:#d9dee6;--bg:#f6f7f9;--card:#fff;--ok:#2f8f5b;--retry:#d8921c;"
	"--fail:#c8383a;--accent:#2357a8}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;font:14px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;color:var(--fg);"
	"background:var(--bg)}\n"
	"header{display:flex;gap:1.5em;align-items:center;padding:.6em 1.2em;background:#1d2430;color:#fff;"
	"flex-wrap:wrap}\n"
	"header a{color:#cfd8e6;text-decoration:none}header a.current,header a:hover{color:#fff}\n"
	".brand{font-weight:700;color:#fff!important}nav{display:flex;gap:1.1em}\n"
	".who{margin-left:auto;color:#cfd8e6;font-size:13px}\n"
	"main{padding:1em 1.2em 2em;max-width:1400px}h1{font-size:20px;margin:.2em 0 .6em}"
	"h2{font-size:16px;margin:1.4em 0 .5em}\n"
	"table{border-collapse:collapse;background:var(--card);border:1px solid var(--line);margin:.3em 0 1em}\n"
	"th,td{padding:.3em .6em;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}\n"
	"th{background:#eef1f5;font-weight:600;font-size:13px}td.num,th.num{text-align:right;"
	"font-variant-numeric:tabular-nums}\n"
	"a{color:var(--accent)}pre{background:#fff;border:1px solid var(--line);padding:.6em;overflow:auto;"
	"max-height:24em;white-space:pre-wrap;word-break:break-all}\n"
	".notice{padding:.5em .8em;border-radius:4px;border:1px solid var(--line);background:#fff}\n"
	".notice.warn{border-color:#e6b35a;background:#fff7e6}.notice.denied{border-color:#b9c3d3;"
	"background:#eef2f8;color:#3b4758}\n"
	".notice.done{border-color:#8fc9a6;background:#eefaf2}\n"
	".tag{display:inline-block;padding:0 .45em;border-radius:3px;font-size:12px;background:#e6e9ef}\n"
	".tag.ok{background:#dff3e7;color:#1f6b41}.tag.failed{background:#fbe3e3;color:#9b2224}"
	".tag.retry,.tag.timeout,.tag.snoozed,.tag.warn{background:#fdf0d8;color:#8a5a07}\n"
	"code{font-size:13px;background:#eef1f5;padding:0 .25em;border-radius:3px;white-space:nowrap}\n"
	"form.action{display:inline;margin:0}form.search{display:flex;flex-wrap:wrap;gap:.6em;align-items:end;"
	"margin:.4em 0 1em}\n"
	"form.search label{display:flex;flex-direction:column;font-size:12px;color:var(--muted)}\n"
	"input,select,button{font:inherit;padding:.25em .45em}\n"
	"button{border:1px solid #9aa8bd;background:#fff;border-radius:4px;cursor:pointer}\n"
	"button.primary{background:var(--accent);border-color:var(--accent);color:#fff}"
	"button.danger{border-color:var(--fail);color:var(--fail)}\n"
	"button.denied{opacity:.55}\n"
	".chart{background:var(--card);border:1px solid var(--line);margin:.3em 0 "
	".4em;max-width:100%;height:auto}\n"
	".chart .done,.spark .done{fill:var(--ok)}.chart .failed,.spark .failed{fill:var(--fail)}"
	".chart .retried,.spark .retried,.chart .retrying{fill:var(--retry)}.chart .due{fill:var(--accent)}"
	".chart .waiting{fill:#9aa8bd}"
	".chart text{font-size:11px;fill:var(--muted)}.chart .axis{stroke:var(--line)}\n"
	".legend{margin:0 0 1em}.legend span{display:inline-block;margin-right:1em;font-size:12px;"
	"color:var(--muted)}\n"
	".legend i{display:inline-block;width:.8em;height:.8em;margin-right:.3em}\n"
	".legend .done{background:var(--ok)}.legend .failed{background:var(--fail)}"
	".legend .retried,.legend .retrying{background:var(--retry)}.legend .due{background:var(--accent)}"
	".legend .waiting{background:#9aa8bd}\n"
	".muted{color:var(--muted)}.spark{vertical-align:middle}\n"
	".charts{display:flex;gap:1.5em;flex-wrap:wrap}\n"
	".tiles{display:flex;gap:.8em;flex-wrap:wrap;margin:.4em 0 1em}\n"
	".tile{display:flex;flex-direction:column;min-width:8.5em;padding:.4em .8em;background:var(--card);"
	"border:1px solid var(--line);border-radius:4px;color:var(--fg);text-decoration:none}\n"
	".tile b{font-size:22px;font-variant-numeric:tabular-nums}.tile span{font-size:12px;color:var(--muted)}\n"
	".tile.warn{border-color:#e6b35a;background:#fff7e6}.tile.bad{border-color:#e59a9b;background:#fdf0f0}\n"
	"td.num.warn{color:#8a5a07;font-weight:600}td.err{min-width:15em;max-width:26em;font-size:13px}"
	"td.err.muted{color:var(--muted)}td.runs{min-width:13em;max-width:20em}.settings{font-size:12px;"
	"color:var(--muted)}td.runs code{white-space:normal;word-break:break-all}\n"
	"button.signout{padding:0 .5em;margin-left:.6em;font-size:12px;background:transparent;color:#cfd8e6;"
	"border-color:#5d6b7e}\n"
	".actions{margin:.4em 0}#dispatch,#failed-count{margin:.4em 0 1em}figure{margin:0}"
	"figcaption{font-size:13px;color:var(--fg);margin-bottom:.2em}\n"
	"footer{padding:1em 1.2em;color:var(--muted);font-size:12px}\n"
	".js-only{display:none}.js .js-only{display:inline}\n";

static const char js[] =
	"'use strict';\n"
	"document.documentElement.classList.add('js');\n"
	"document.addEventListener('DOMContentLoaded', function () {\n"
	"  var box = document.getElementById('autorefresh'), timer = null;\n"
	"  function busy() {\n"
	"    var a = document.activeElement;\n"
	"    return document.hidden || (a && a !== box && /^(INPUT|SELECT|TEXTAREA)$/.test(a.tagName));\n"
	"  }\n"
	"  function schedule() {\n"
	"    if (timer) { clearTimeout(timer); timer = null; }\n"
	"    if (box && box.checked && document.body.dataset.refresh === '1')\n"
	"      timer = setTimeout(function () { if (busy()) schedule(); else location.reload(); }, 5000);\n"
	"  }\n"
	"  if (box) {\n"
	"    box.checked = localStorage.getItem('pg_relay.refresh') !== '0';\n"
	"    box.addEventListener('change', function () {\n"
	"      localStorage.setItem('pg_relay.refresh', box.checked ? '1' : '0'); schedule();\n"
	"    });\n"
	"    schedule();\n"
	"  }\n"
	"  document.querySelectorAll('form[data-confirm]').forEach(function (f) {\n"
	"    f.addEventListener('submit', function (e) { if (!confirm(f.dataset.confirm)) e.preventDefault(); "
	"});\n"
	"  });\n"
	"});\n";

/* a relay: two dots and an arrow, in the header's colours */
static const char icon[] =
	"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 16 16\">"
	"<rect width=\"16\" height=\"16\" rx=\"3\" fill=\"#1d2430\"/>"
	"<circle cx=\"4\" cy=\"8\" r=\"2\" fill=\"#2f8f5b\"/><circle cx=\"12\" cy=\"8\" r=\"2\" "
	"fill=\"#cfd8e6\"/><path d=\"M6.5 8h3\" stroke=\"#cfd8e6\" stroke-width=\"1.5\"/></svg>";

static const struct WebAsset assets[] = {
	{"/static/console.css", "text/css; charset=utf-8", css},
	{"/static/console.js", "text/javascript; charset=utf-8", js},
	{"/static/icon.svg", "image/svg+xml", icon},
};

const struct WebAsset *
web_asset(const char *path)
{
	size_t i;

	for (i = 0; i < sizeof assets / sizeof assets[0]; i++)
		if (strcmp(assets[i].path, path) == 0)
			return &assets[i];
	return NULL;
}
