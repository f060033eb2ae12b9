/*
 * statuspage.c - the HTML of GET /status: the page's writer (struct out,
 * put(), esc(), a table's cells), its head and CSS, and the two pages.
 * The sections are drawn beside it: statuspage_chart.c (the SVG
 * charts), statuspage_routing.c (a model's lock, candidates, breakers,
 * history, changes and APIs, and the summary), statuspage_keys.c (the
 * team keys) and statuspage_conv.c (the conversations), sharing
 * statuspage_impl.h.
 *
 * Pure: it renders the /stats tree (stats.c) with the time given, into
 * a buf, and does no I/O.  No JavaScript: the page refreshes itself
 * with <meta http-equiv=refresh>, its CSS is inline and its charts are
 * inline SVG.  Every string that comes from the tree is escaped by
 * esc(); the format strings of putf() never carry one.  Tables turn
 * into one card per row below 760 px, so a 390 px phone shows every
 * name and number without clipping or sideways scrolling.
 *
 * Ownership: the tree is borrowed; the page is one malloc'd buffer
 * returned to the caller.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "record.h"
#include "statuspage.h"
#include "statuspage_impl.h"

void
put(struct out *o, const char *s)
{
	if (o->ok && buf_adds(&o->b, s) != ORGW_OK)
		o->ok = false;
}

/* Formatted text that never holds a string from the tree. */
__attribute__((format(printf, 2, 3))) void
putf(struct out *o, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		o->ok = false;
		return;
	}
	put(o, tmp);
}

/* s HTML-escaped, for text and for quoted attribute values. */
void
esc(struct out *o, const char *s)
{
	const char *p, *rep;
	char one[2] = {0, 0};

	for (p = s ? s : ""; *p != '\0'; p++) {
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
			one[0] = *p;
			rep = one;
			break;
		}
		put(o, rep);
	}
}

double
num(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(it) && isfinite(it->valuedouble) ?
		       it->valuedouble :
		       0;
}

const char *
str(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : "";
}

/* "YYYY-MM-DD HH:MM:SS" (UTC) of unix time t; "-" for 0. */
void
fmt_time(int64_t t, char dst[24])
{
	int64_t s = ((t % 86400) + 86400) % 86400;

	if (t == 0) {
		snprintf(dst, 24, "-");
		return;
	}
	record_day(t, dst);
	snprintf(dst + 10, 14, " %02d:%02d:%02d", (int)(s / 3600),
		 (int)(s / 60 % 60), (int)(s % 60));
}

/* A span of seconds as "3 min" / "2 h 5 min" / "45 s". */
void
fmt_span(int64_t s, char dst[32])
{
	if (s < 0)
		s = -s;
	if (s < 120)
		snprintf(dst, 32, "%lld s", (long long)s);
	else if (s < 7200)
		snprintf(dst, 32, "%lld min", (long long)(s / 60));
	else
		snprintf(dst, 32, "%lld h %lld min", (long long)(s / 3600),
			 (long long)(s / 60 % 60));
}

/* One table cell with its label (shown before it on narrow screens). */
void
td(struct out *o, const char *label, const char *cls, const char *text)
{
	put(o, "<td data-label=\"");
	esc(o, label);
	put(o, cls ? "\" class=\"" : "");
	put(o, cls ? cls : "");
	put(o, "\">");
	esc(o, text);
	put(o, "</td>");
}

/* A numeric cell; fmt formats numbers only. */
__attribute__((format(printf, 3, 4))) void
tdf(struct out *o, const char *label, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	td(o, label, "n", tmp);
}

void
thead(struct out *o, const char *const *cols, size_t n)
{
	size_t i;

	put(o, "<table class=\"r\"><thead><tr>");
	for (i = 0; i < n; i++) {
		put(o, "<th>");
		esc(o, cols[i]);
		put(o, "</th>");
	}
	put(o, "</tr></thead><tbody>");
}

static const char css[] =
	"*{box-sizing:border-box}"
	"body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;"
	"margin:0 auto;max-width:1240px;padding:12px 16px;color:#1d2329;"
	"background:#f6f7f9}"
	"h1{font-size:20px;margin:4px 0}"
	"h2{font-size:17px;margin:0 0 6px;overflow-wrap:anywhere}"
	"h3{font-size:14px;margin:14px 0 4px;color:#44505c}"
	"header{display:flex;flex-wrap:wrap;gap:8px 16px;align-items:baseline;"
	"justify-content:space-between}"
	"header p{margin:0;color:#5b6671}"
	"section{background:#fff;border:1px solid #dde1e6;border-radius:6px;"
	"padding:12px 14px;margin:14px 0}"
	"table{border-collapse:collapse;width:100%}"
	"th,td{padding:3px 6px;border-bottom:1px solid #e6e9ed;text-align:left;"
	"vertical-align:top;overflow-wrap:anywhere}"
	"th{font-weight:600;color:#44505c;font-size:12px}"
	"td.n{text-align:right;font-variant-numeric:tabular-nums}"
	"dl{display:grid;grid-template-columns:repeat(auto-fill,minmax(190px,1fr));"
	"gap:4px 14px;margin:0}"
	"dl div{min-width:0}dt{font-size:12px;color:#5b6671}"
	"dd{margin:0;font-weight:600;overflow-wrap:anywhere}"
	"svg{display:block;width:100%;height:auto;max-width:760px}"
	"svg text{font-size:11px;fill:#5b6671}"
	".legend{display:flex;flex-wrap:wrap;gap:2px 14px;margin:2px 0 6px}"
	".sw{display:inline-block;width:10px;height:10px;margin-right:4px;"
	"border-radius:2px}"
	".err{color:#b3261e;font-weight:600}.muted{color:#5b6671}"
	".cool{color:#b3261e}"
	"form{margin:0}button{font:inherit;padding:3px 10px}"
	"input{font:inherit;padding:4px;max-width:100%}"
	"@media (max-width:760px){"
	"body{padding:8px}section{padding:10px}"
	"table.r thead{display:none}"
	"table.r,table.r tbody,table.r tr{display:block;width:100%}"
	"table.r tr{border:1px solid #e6e9ed;border-radius:4px;margin:0 0 6px;"
	"padding:2px 0}"
	"table.r td{display:flex;justify-content:space-between;gap:10px;"
	"border:0;text-align:right;padding:1px 8px}"
	"table.r td::before{content:attr(data-label);font-weight:600;"
	"color:#44505c;text-align:left;flex:0 1 auto;min-width:0}"
	"}";

static void
head(struct out *o, const char *title, bool refresh)
{
	put(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
	       "<meta name=\"viewport\" content=\"width=device-width,"
	       "initial-scale=1\">");
	if (refresh)
		putf(o, "<meta http-equiv=\"refresh\" content=\"%d\">",
		     STATUSPAGE_REFRESH_SECONDS);
	put(o, "<title>");
	esc(o, title);
	put(o, "</title><style>");
	put(o, css);
	put(o, "</style></head><body>");
}

char *
statuspage_html(const cJSON *stats, const struct statuspage_opts *op,
		size_t *len)
{
	struct out o = {{0}, true};
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(stats, "models");
	const cJSON *m;
	char t[24];

	head(&o, "orgw status", true);
	fmt_time(op->now, t);
	putf(&o, "<header><h1>orgw status</h1><p>%s UTC, refreshes every "
		 "%d s</p><form method=\"post\"><input type=\"hidden\" "
		 "name=\"logout\" value=\"1\"><button>Log out</button>"
		 "</form></header>",
	     t, STATUSPAGE_REFRESH_SECONDS);
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(stats,
							    "state_error"))) {
		put(&o, "<p class=\"err\">state unreadable: ");
		esc(&o, str(stats, "state_error"));
		put(&o, "</p>");
	}
	summary(&o, models);
	keys_table(&o, stats);
	conv_section(&o, stats, op);
	cJSON_ArrayForEach(m, models)
	{
		put(&o, "<section class=\"model\"><h2>");
		esc(&o, m->string);
		put(&o, "</h2>");
		lock_block(&o, m, op);
		api_table(&o, m);
		cand_table(&o, m);
		breaker_table(&o, m, op);
		history(&o, m, op);
		changes_table(&o, m);
		put(&o, "</section>");
	}
	put(&o, "</body></html>\n");
	if (!o.ok) {
		buf_free(&o.b);
		return NULL;
	}
	*len = o.b.len;
	return o.b.p;
}

char *
statuspage_login_html(const char *message, size_t *len)
{
	struct out o = {{0}, true};

	head(&o, "orgw status: log in", false);
	put(&o, "<section><h1>orgw status</h1>");
	if (message != NULL) {
		put(&o, "<p class=\"err\" role=\"alert\">");
		esc(&o, message);
		put(&o, "</p>");
	}
	put(&o, "<form method=\"post\"><p><label for=\"key\">Client key "
		"(CUSTOM_ACCESS_KEY, or a team key made --admin)</label><br>"
		"<input id=\"key\" name=\"key\" "
		"type=\"password\" autocomplete=\"current-password\" "
		"required autofocus> <button>Log in</button></p></form>"
		"</section></body></html>\n");
	if (!o.ok) {
		buf_free(&o.b);
		return NULL;
	}
	*len = o.b.len;
	return o.b.p;
}
