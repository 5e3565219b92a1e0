/*
 * test_web.c - the web console's pure parts: escaping, ids, the password file and its hashes,
 * the client an address counts as, failed sign-ins per client and per name, the sign-in token and
 * its file, which connection is closed when there are too many, CSRF tokens, the charts' SVG, what
 * an answer of pgrelay.cancel() is told as, durations in words.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base64.h"
#include "unit.h"
#include "web_addr.h"
#include "web_auth.h"
#include "web_chart.h"
#include "web_conns.h"
#include "web_csrf.h"
#include "web_html.h"
#include "web_pages.h"
#include "web_query.h"
#include "web_signin.h"
#include "web_throttle.h"

static void
test_html_escape(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{"plain", "plain"},
		{"<script>alert('x')</script>", "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"},
		{"a & b \"c\"", "a &amp; b &quot;c&quot;"},
		{"", ""},
		{"caf\xC3\xA9 \xE2\x80\xAE", "caf\xC3\xA9 \xE2\x80\xAE"},
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct Buf b = BUF_INIT;

		html_esc(&b, cases[i].in);
		CHECK_STR(b.data ? b.data : "", cases[i].want);
		buf_free(&b);
	}
}

static void
test_html_cut_and_url(void)
{
	struct Buf b = BUF_INIT;

	/* cut at a character boundary: "é" is two bytes and is not split */
	html_esc_cut(&b, "ab\xC3\xA9\xC3\xA9", 3);
	CHECK_STR(b.data, "ab\xE2\x80\xA6");
	buf_reset(&b);
	html_esc_cut(&b, "<<<<", 2);
	CHECK_STR(b.data, "&lt;&lt;\xE2\x80\xA6");
	buf_reset(&b);
	url_esc(&b, "a b&c=d/\xC3\xA9~");
	CHECK_STR(b.data, "a%20b%26c%3Dd%2F%C3%A9~");
	buf_reset(&b);
	html_age(&b, 42);
	buf_puts(&b, " ");
	html_age(&b, 185);
	buf_puts(&b, " ");
	html_age(&b, 7800);
	buf_puts(&b, " ");
	html_age(&b, 90000);
	buf_puts(&b, " ");
	html_age(&b, -1);
	CHECK_STR(b.data, "42s 3m05s 2h10m 1d01h -");
	/* a setting's duration in words */
	buf_reset(&b);
	html_duration(&b, 10);
	buf_puts(&b, " | ");
	html_duration(&b, 3600);
	buf_puts(&b, " | ");
	html_duration(&b, 5400);
	buf_puts(&b, " | ");
	html_duration(&b, 0.05);
	buf_puts(&b, " | ");
	html_duration(&b, 1.5);
	buf_puts(&b, " | ");
	html_duration(&b, 61.25);
	buf_puts(&b, " | ");
	html_duration(&b, 2592000);
	buf_puts(&b, " | ");
	html_duration(&b, 90061);
	buf_puts(&b, " | ");
	html_duration(&b, -1);
	CHECK_STR(b.data,
			  "10 s | 1 h | 1 h 30 min | 50 ms | 1.5 s | 1 min 1.25 s | 30 d | 1 d 1 h 1 min 1 s | -");
	buf_free(&b);
}

static void
test_digits_and_id_time(void)
{
	struct Buf b = BUF_INIT;

	CHECK(web_digits("0") && web_digits("121355847983955988") && web_digits("9223372036854775807"));
	CHECK(!web_digits(NULL) && !web_digits("") && !web_digits("-1") && !web_digits("12x") &&
		  !web_digits("9223372036854775808") && !web_digits("1 OR 1=1") &&
		  !web_digits("00000000000000000000"));
	/* 2026-12-01 21:04:50 UTC: an id of that second (node 0) */
	web_id_time(&b, (long long) (1796159090000LL - 1767225600000LL) << 22);
	CHECK_STR(b.data, "2026-12-01 21:04:50");
	buf_free(&b);
}

/* write_file writes text to a temporary file and returns its name (static). */
static const char *
write_file(const char *text)
{
	static char path[64];
	FILE *f;
	int fd;

	snprintf(path, sizeof path, "/tmp/test_web.XXXXXX");
	fd = mkstemp(path);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (f == NULL)
		return "/nonexistent";
	fputs(text, f);
	fclose(f);
	return path;
}

/* client is the client an address (IPv4 or IPv6 text) counts as. */
static struct WebAddr
client(const char *text)
{
	struct sockaddr_in a4 = {.sin_family = AF_INET};
	struct sockaddr_in6 a6 = {.sin6_family = AF_INET6};
	struct WebAddr w;

	if (inet_pton(AF_INET, text, &a4.sin_addr) == 1)
		CHECK(web_addr_of((struct sockaddr *) &a4, &w));
	else {
		CHECK(inet_pton(AF_INET6, text, &a6.sin6_addr) == 1);
		CHECK(web_addr_of((struct sockaddr *) &a6, &w));
	}
	return w;
}

static void
test_addr(void)
{
	struct WebAddr a = client("127.0.0.1"), b = client("::ffff:127.0.0.1"), c = client("127.0.0.2");
	struct WebAddr d = client("2001:db8:1:2::1"), e = client("2001:db8:1:2:ffff::9"),
				   f = client("2001:db8:1:3::1");
	struct WebAddr loop6 = client("::1");
	struct sockaddr other = {.sa_family = AF_UNIX};
	char text[64];
	struct sockaddr_in a4 = {.sin_family = AF_INET};

	/* an IPv4 address is one client, also mapped into IPv6; an IPv6 /64 is one client */
	CHECK(memcmp(&a, &b, sizeof a) == 0 && memcmp(&a, &c, sizeof a) != 0);
	CHECK(memcmp(&d, &e, sizeof d) == 0 && memcmp(&d, &f, sizeof d) != 0);
	CHECK(memcmp(&a, &loop6, sizeof a) != 0);
	CHECK(!web_addr_of(&other, &a) && !web_addr_of(NULL, &a));
	inet_pton(AF_INET, "127.0.0.9", &a4.sin_addr);
	web_addr_text((struct sockaddr *) &a4, text, sizeof text);
	CHECK_STR(text, "127.0.0.9");
	web_addr_text(NULL, text, sizeof text);
	CHECK_STR(text, "?");
}

static void
test_throttle(void)
{
	struct WebAddr one = client("192.0.2.1"), two = client("192.0.2.2"), three = client("192.0.2.3");
	struct WebAddr odd = client("198.51.100.1"), even = client("198.51.100.2");
	char name[16];
	int i;

	throttle_clear();
	/* a client's failures stop that client only, whatever names it tries, until its window ends */
	for (i = 0; i < THROTTLE_MAX; i++) {
		CHECK(!throttle_blocked(&one, "mallory", 100));
		throttle_failed(&one, i % 2 ? "mallory" : NULL, 100);
	}
	CHECK(throttle_blocked(&one, "mallory", 100) && throttle_blocked(&one, "ann", 105) &&
		  throttle_blocked(&one, NULL, 109));
	CHECK(!throttle_blocked(&two, "ann", 100) && !throttle_blocked(&two, "mallory", 100));
	CHECK(!throttle_blocked(&one, "ann", 100 + THROTTLE_WINDOW));
	/* a name guessed at from many clients: not for those that failed, still for one that did not */
	throttle_clear();
	for (i = 0; i < THROTTLE_MAX; i++)
		throttle_failed(i % 2 ? &odd : &even, "ann", 200);
	CHECK(throttle_blocked(&odd, "ann", 200) && throttle_blocked(&even, "ann", 200));
	CHECK(!throttle_blocked(&odd, "bob", 200));
	CHECK(!throttle_blocked(&three, "ann", 200));
	throttle_failed(&three, "ann", 201);
	CHECK(throttle_blocked(&three, "ann", 201) && !throttle_blocked(&three, "bob", 201));
	CHECK(!throttle_blocked(&three, "ann", 211));
	/* a bounded table: more clients than slots reuse the slots whose windows began first */
	throttle_clear();
	for (i = 0; i < THROTTLE_MAX; i++)
		throttle_failed(&one, NULL, 300);
	for (i = 0; i < 4 * THROTTLE_SLOTS; i++) {
		struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x0a000000u + (unsigned) i)};
		struct WebAddr from;

		CHECK(web_addr_of((struct sockaddr *) &a4, &from));
		snprintf(name, sizeof name, "n%d", i);
		throttle_failed(&from, name, 301);
	}
	CHECK(!throttle_blocked(&one, NULL, 302));
	throttle_clear();
}

static void
test_conns(void)
{
	struct WebAddr a = client("127.0.0.1"), b = client("127.0.0.2");
	char conn[CONNS_MAX + 8];
	int evict[2], n, i, fd = 100;

	/* the ninth of one client closes that client's first, which is waiting longest */
	for (i = 0; i < CONNS_PER_CLIENT; i++)
		CHECK(conns_started(&conn[i], fd + i, &a, evict) == 0);
	n = conns_started(&conn[CONNS_PER_CLIENT], fd + CONNS_PER_CLIENT, &a, evict);
	CHECK(n == 1 && evict[0] == fd);
	conns_closed(&conn[0]);
	/* a connection that answered a request waits from then on: the second is now the oldest */
	conns_answered(&conn[1]);
	n = conns_started(&conn[CONNS_PER_CLIENT + 1], fd + CONNS_PER_CLIENT + 1, &a, evict);
	CHECK(n == 1 && evict[0] == fd + 2);
	conns_closed(&conn[2]);
	CHECK(conns_open() == CONNS_PER_CLIENT);
	for (i = 0; i < CONNS_MAX; i++)
		conns_closed(&conn[i]);
	CHECK(conns_open() == 0);
	/* beyond CONNS_SOFT of many clients, the oldest of all is closed, and the newcomer kept */
	for (i = 0; i < CONNS_SOFT; i++) {
		struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000100u + (unsigned) i)};
		struct WebAddr from;

		CHECK(web_addr_of((struct sockaddr *) &a4, &from));
		CHECK(conns_started(&conn[i], fd + i, &from, evict) == 0);
	}
	n = conns_started(&conn[CONNS_SOFT], fd + CONNS_SOFT, &b, evict);
	CHECK(n == 1 && evict[0] == fd);
	n = conns_started(&conn[CONNS_SOFT + 1], fd + CONNS_SOFT + 1, &b, evict);
	CHECK(n == 1 && evict[0] == fd + 1);
	for (i = 0; i < CONNS_MAX; i++)
		conns_closed(&conn[i]);
	CHECK(conns_open() == 0);
}

static void
test_signin(void)
{
	char path[64], err[256], token[65], text[128], one[65], two[65], other[65], nonce[65];
	int i;
	struct stat st;
	FILE *f;
	int fd;

	CHECK(signin_init());
	snprintf(token, sizeof token, "%s", signin_token());
	CHECK(signin_session_new(one) && signin_session_new(two));
	CHECK(strlen(token) == 64 && strlen(one) == 64 && strcmp(token, one) != 0 && strcmp(one, two) != 0);
	CHECK(signin_token_ok(token) && !signin_token_ok(one) && !signin_token_ok(NULL));
	CHECK(signin_session_ok(one) && signin_session_ok(two) && !signin_session_ok(token) &&
		  !signin_session_ok("") && !signin_session_ok(NULL));
	/* signing out ends one browser's session, not the other's */
	CHECK(signin_session_end(one) && !signin_session_ok(one) && signin_session_ok(two) &&
		  !signin_session_end(one));
	/* at most 64 open: the 65th takes the place of the one used longest ago, here two */
	CHECK(signin_session_new(one));
	for (i = 0; i < 62; i++)
		CHECK(signin_session_new(other) && signin_session_ok(one));
	CHECK(signin_session_new(other) && signin_session_ok(other) && signin_session_ok(one) &&
		  !signin_session_ok(two));
	/* a sign-out form of HTTP Basic is answered 401 once */
	CHECK(signin_nonce(nonce) && strlen(nonce) == 64);
	CHECK(signin_nonce_answer(nonce) && !signin_nonce_answer(nonce) && !signin_nonce_answer(NULL) &&
		  !signin_nonce_answer("short"));
	token[63] = token[63] == '0' ? '1' : '0';
	CHECK(!signin_token_ok(token));
	/* the file: made with mode 0600, overwritten when it is this user's and private */
	snprintf(path, sizeof path, "/tmp/test_web_token.XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0 && close(fd) == 0 && unlink(path) == 0);
	CHECK(signin_write_file(path, "http://127.0.0.1:1/sign-in?token=x\n", err, sizeof err));
	CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
	CHECK(signin_write_file(path, "second\n", err, sizeof err));
	f = fopen(path, "r");
	CHECK(f != NULL && fgets(text, sizeof text, f) != NULL);
	if (f != NULL)
		fclose(f);
	CHECK_STR(text, "second\n");
	/* a file others may read is refused and left as it is */
	CHECK(chmod(path, 0644) == 0);
	CHECK(!signin_write_file(path, "third\n", err, sizeof err) && strstr(err, "remove it or name another"));
	CHECK(stat(path, &st) == 0 && st.st_size == 7);
	unlink(path);
	CHECK(!signin_write_file("/nonexistent/dir/token", "x", err, sizeof err) && strstr(err, "cannot write"));
	signin_forget();
	CHECK(!signin_session_ok(other) && !signin_token_ok(signin_token()));
}

static const char *
basic(const char *user_pass)
{
	static char header[256];
	struct Buf b = BUF_INIT;

	buf_puts(&b, "Basic ");
	if (!base64_encode(&b, user_pass, strlen(user_pass), 0))
		return "";
	snprintf(header, sizeof header, "%s", b.data);
	buf_free(&b);
	return header;
}

static void
test_password_file(void)
{
	struct Buf file = BUF_INIT;
	char err[256], user[AUTH_NAME_MAX + 1];
	const char *path;
	struct WebAddr here = client("127.0.0.1"), there = client("127.0.0.2");
	int i;

	CHECK(auth_hash_line("ann", "correct horse", 1000, &file, err, sizeof err));
	CHECK(auth_hash_line("bob.b@example", "s3cret:with:colons", 1000, &file, err, sizeof err));
	CHECK(!auth_hash_line("a:b", "x", 1000, &file, err, sizeof err) && strstr(err, "user name") != NULL);
	CHECK(!auth_hash_line("ann", "", 1000, &file, err, sizeof err) && strstr(err, "empty") != NULL);
	CHECK(!auth_hash_line("ann", "x", 10, &file, err, sizeof err) && strstr(err, "--iterations") != NULL);
	buf_puts(&file, "# a comment\n\n");
	path = write_file(file.data);
	CHECK(auth_load(path, err, sizeof err));
	CHECK(auth_users() == 2);
	CHECK(auth_check(basic("ann:correct horse"), &here, user, sizeof user) == AUTH_OK);
	CHECK_STR(user, "ann");
	/* twice: from the cache */
	CHECK(auth_check(basic("ann:correct horse"), &here, user, sizeof user) == AUTH_OK);
	CHECK(auth_check(basic("bob.b@example:s3cret:with:colons"), &here, user, sizeof user) == AUTH_OK);
	CHECK_STR(user, "bob.b@example");
	CHECK(auth_check(basic("ann:correct horsE"), &here, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check(basic("carol:correct horse"), &here, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check(basic("ann"), &here, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check("Bearer abc", &here, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check("Basic !!!", &here, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check(NULL, &here, user, sizeof user) == AUTH_BAD);
	/* another client's failed sign-ins stop that client, not this one */
	for (i = 0; i < THROTTLE_MAX; i++)
		CHECK(auth_check(basic("mallory:guess"), &there, user, sizeof user) == AUTH_BAD);
	CHECK(auth_check(basic("ann:correct horse"), &there, user, sizeof user) == AUTH_OK); /* remembered */
	CHECK(auth_check(basic("bob.b@example:wrong"), &there, user, sizeof user) == AUTH_THROTTLED);
	CHECK(auth_check(basic("bob.b@example:wrong"), &here, user, sizeof user) == AUTH_BAD);
	unlink(path);
	auth_free();
	buf_free(&file);
}

static void
test_bad_password_files(void)
{
	static const struct {
		const char *text, *says;
	} cases[] = {
		{"ann:pbkdf2-sha256:1000:abc\n", ":1: expected NAME:pbkdf2-sha256"},
		{"ann:md5:1000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "unknown hash scheme"},
		{"ann:pbkdf2-sha256:10:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "iteration count"},
		{"ann:pbkdf2-sha256: 1000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "iteration count"},
		{"ann:pbkdf2-sha256:+1000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "iteration count"},
		{"ann:pbkdf2-sha256:1000:AAAA:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "16 and the hash 32 bytes"},
		{"a b:pbkdf2-sha256:1000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n",
		 "user name"},
		{"ann:pbkdf2-sha256:1000:AAAAAAAAAAAAAAAAAAAAAA==:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:x\n",
		 "too many fields"},
		{"# nobody\n", "has no user"},
	};
	char err[256];
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *path = write_file(cases[i].text);

		err[0] = '\0';
		CHECK(!auth_load(path, err, sizeof err));
		if (strstr(err, cases[i].says) == NULL)
			CHECK_STR(err, cases[i].says);
		unlink(path);
	}
	CHECK(!auth_load("/nonexistent/users", err, sizeof err) && strstr(err, "cannot read") != NULL);
}

static void
test_csrf(void)
{
	char a[65], b[65], none[65];

	CHECK(csrf_init());
	csrf_token("ann", a);
	csrf_token("bob", b);
	csrf_token(NULL, none);
	CHECK(strlen(a) == 64 && strcmp(a, b) != 0 && strcmp(a, none) != 0);
	CHECK(csrf_check("ann", a) && !csrf_check("bob", a) && csrf_check(NULL, none) && !csrf_check(NULL, a));
	CHECK(!csrf_check("ann", NULL) && !csrf_check("ann", "") && !csrf_check("ann", "00"));
	a[10] = a[10] == '0' ? '1' : '0';
	CHECK(!csrf_check("ann", a));
}

static void
test_chart(void)
{
	long long d[4] = {1, 0, 5, 2}, r[4] = {0, 0, 1, 0}, f[4] = {0, 0, 0, 3};
	long long due[3] = {4, -1, 0}, waiting[3] = {1, -1, 0}, retrying[3] = {700, -1, 0},
			  failed[3] = {2, -1, 0};
	const struct ChartSeries s[] = {{"done", d}, {"retried", r}, {"failed", f}};
	const struct ChartSeries bl[] = {
		{"due", due}, {"waiting", waiting}, {"retrying", retrying}, {"failed", failed}};
	struct Chart c = {"Last <hour>", "8 done & more", 1796159040, 60, 4, s, 3};
	struct Buf b = BUF_INIT;

	chart_bars(&b, &c);
	CHECK(strstr(b.data, "Last &lt;hour&gt;") != NULL);
	CHECK(strstr(b.data, "8 done &amp; more") != NULL);
	CHECK(strstr(b.data, "21:04 UTC: 1 done, 0 retried, 0 failed") != NULL);
	CHECK(strstr(b.data, "style=") == NULL && strstr(b.data, "<script") == NULL);
	buf_reset(&b);
	chart_spark(&b, &c);
	CHECK(strstr(b.data, "class=\"failed\"") != NULL);
	/* a backlog: four series stacked, the peak on the scale; a bucket without a sample has no bar */
	buf_reset(&b);
	c = (struct Chart){"Backlog", NULL, 1796159040, 60, 3, bl, 4};
	chart_bars(&b, &c);
	CHECK(strstr(b.data, "21:04 UTC: 4 due, 1 waiting, 700 retrying, 2 failed") != NULL);
	CHECK(strstr(b.data, "21:05 UTC: no sample") != NULL);
	CHECK(strstr(b.data, ">707</text>") != NULL);
	CHECK(strstr(b.data, "class=\"retrying\"") != NULL && strstr(b.data, "class=\"due\"") != NULL);
	CHECK(strstr(b.data, "\xC2\xB7") == NULL);
	buf_free(&b);
}

static void
test_cancel_text(void)
{
	CHECK(strstr(web_cancel_text("cancelled"), "it will not run") != NULL);
	CHECK(strstr(web_cancel_text("running"), "nothing is cancelled") != NULL);
	CHECK(strstr(web_cancel_text("finished"), "has run already") != NULL);
	/* an answer of a later pg_relay is shown as it is, after a neutral text */
	CHECK_STR(web_cancel_text("deferred"), "The database answered");
	CHECK_STR(web_cancel_text(""), "The database answered");
}

int
main(void)
{
	RUN(test_html_escape);
	RUN(test_html_cut_and_url);
	RUN(test_digits_and_id_time);
	RUN(test_addr);
	RUN(test_throttle);
	RUN(test_conns);
	RUN(test_signin);
	RUN(test_password_file);
	RUN(test_bad_password_files);
	RUN(test_csrf);
	RUN(test_chart);
	RUN(test_cancel_text);
	return UNIT_DONE();
}
