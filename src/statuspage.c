/*
 * statuspage.c - the HTML of GET /status.
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
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "convlist.h"
#include "ledger.h"
#include "record.h"
#include "statuspage.h"

#define DAYS LEDGER_DAYS
#define MAX_PROVIDERS 16

/* Chart geometry (SVG user units; the SVG scales to the page width). */
#define CH_W 640
#define CH_H 180
#define CH_L 44
#define CH_R 630
#define CH_T 10
#define CH_B 150

struct out {
	struct buf b;
	bool ok;
};

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
				      "#9467bd", "#ff7f0e", "#8c564b",
				      "#e377c2", "#17becf"};
#define N_COLOURS (sizeof(colours) / sizeof(colours[0]))

static void
put(struct out *o, const char *s)
{
	if (o->ok && buf_adds(&o->b, s) != ORGW_OK)
		o->ok = false;
}

/* Formatted text that never holds a string from the tree. */
__attribute__((format(printf, 2, 3))) static void
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
static void
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

static double
num(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(it) && isfinite(it->valuedouble) ?
		       it->valuedouble :
		       0;
}

static const char *
str(const cJSON *o, const char *k)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsString(it) ? it->valuestring : "";
}

/* "YYYY-MM-DD HH:MM:SS" (UTC) of unix time t; "-" for 0. */
static void
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
static void
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
static void
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
__attribute__((format(printf, 3, 4))) static void
tdf(struct out *o, const char *label, const char *fmt, ...)
{
	char tmp[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	td(o, label, "n", tmp);
}

static void
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
	"color:#44505c;text-align:left;flex:none}"
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

/* The provider tags a model's "days" name, in first-seen order. */
static size_t
day_tags(const cJSON *days, const char **tags, size_t max)
{
	const cJSON *d, *p;
	size_t n = 0, i;

	cJSON_ArrayForEach(d, days)
	{
		cJSON_ArrayForEach(p, d)
		{
			if (p->string == NULL || !cJSON_IsObject(p))
				continue;
			for (i = 0; i < n && strcmp(tags[i], p->string); i++)
				;
			if (i == n && n < max)
				tags[n++] = p->string;
		}
	}
	return n;
}

static double
chart_x(int i)
{
	return CH_L + (CH_R - CH_L) * (i + 0.5) / DAYS;
}

static void
chart_open(struct out *o, const char *label, const char *days[DAYS])
{
	put(o, "<svg viewBox=\"0 0 640 180\" role=\"img\" aria-label=\"");
	esc(o, label);
	putf(o, "\"><line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"#9aa4ad\"/>",
	     CH_L, CH_B, CH_R, CH_B);
	put(o, "<text x=\"44\" y=\"168\">");
	esc(o, days[0]);
	put(o, "</text><text x=\"630\" y=\"168\" text-anchor=\"end\">");
	esc(o, days[DAYS - 1]);
	put(o, "</text>");
}

/* Measured hit rate per provider per UTC day: a line per provider. */
static void
hit_chart(struct out *o, const cJSON *days, const char *dayname[DAYS])
{
	const char *tags[MAX_PROVIDERS];
	size_t n = day_tags(days, tags, MAX_PROVIDERS), t;
	int i, y;

	chart_open(o, "measured cache hit rate per day", dayname);
	for (y = 0; y <= 100; y += 50) {
		double yy = CH_B - (CH_B - CH_T) * y / 100.0;
		putf(o, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#e6e9ed\"/><text x=\"38\" y=\"%.1f\" "
			"text-anchor=\"end\">%d%%</text>",
		     CH_L, CH_R, yy, yy, yy + 4, y);
	}
	for (t = 0; t < n; t++) {
		const char *c = colours[t % N_COLOURS];
		struct buf pts = {0};
		int npts = 0;

		for (i = 0; i < DAYS; i++) {
			const cJSON *p = cJSON_GetObjectItemCaseSensitive(
				cJSON_GetObjectItemCaseSensitive(days,
								 dayname[i]),
				tags[t]);
			double pr = num(p, "prompt_tokens");
			char xy[64];

			if (pr <= 0)
				continue;
			snprintf(xy, sizeof(xy), "%.1f,%.1f ", chart_x(i),
				 CH_B - (CH_B - CH_T) *
						num(p, "cached_tokens") / pr);
			if (buf_adds(&pts, xy) != ORGW_OK)
				o->ok = false;
			npts++;
			putf(o, "<circle r=\"3\" fill=\"%s\" cx=\"%.1f\" "
				"cy=\"%.1f\"/>",
			     c, chart_x(i),
			     CH_B - (CH_B - CH_T) * num(p, "cached_tokens") /
					    pr);
		}
		if (npts > 1 && pts.p != NULL) {
			putf(o, "<polyline fill=\"none\" stroke=\"%s\" "
				"stroke-width=\"2\" points=\"",
			     c);
			put(o, pts.p);
			put(o, "\"/>");
		}
		buf_free(&pts);
	}
	put(o, "</svg><div class=\"legend\">");
	for (t = 0; t < n; t++) {
		putf(o, "<span><span class=\"sw\" style=\"background:%s\">"
			"</span>",
		     colours[t % N_COLOURS]);
		esc(o, tags[t]);
		put(o, "</span>");
	}
	put(o, "</div>");
}

/* Spend (grey) and saving (green) per UTC day, stacked: the bar's top is
 * what the same requests would have cost uncached. */
static void
money_chart(struct out *o, const double *spend, const double *saved,
	    const char *dayname[DAYS])
{
	double max = 0, w = (CH_R - CH_L) / (double)DAYS * 0.7;
	int i;

	for (i = 0; i < DAYS; i++)
		if (spend[i] + fmax(saved[i], 0) > max)
			max = spend[i] + fmax(saved[i], 0);
	chart_open(o, "spend and savings per day", dayname);
	/* Inside the plot: a dollar figure is wider than the left margin. */
	putf(o, "<text x=\"%d\" y=\"%d\">max $%.4g</text>", CH_L + 4,
	     CH_T + 10, max);
	if (max <= 0) {
		put(o, "</svg>");
		return;
	}
	for (i = 0; i < DAYS; i++) {
		double hs = (CH_B - CH_T) * spend[i] / max;
		double hv = (CH_B - CH_T) * fmax(saved[i], 0) / max;

		if (hs > 0)
			putf(o, "<rect fill=\"#8a96a3\" x=\"%.1f\" y=\"%.1f\" "
				"width=\"%.1f\" height=\"%.1f\"/>",
			     chart_x(i) - w / 2, CH_B - hs, w, hs);
		if (hv > 0)
			putf(o, "<rect fill=\"#2ca02c\" x=\"%.1f\" y=\"%.1f\" "
				"width=\"%.1f\" height=\"%.1f\"/>",
			     chart_x(i) - w / 2, CH_B - hs - hv, w, hv);
	}
	put(o, "</svg><div class=\"legend\"><span><span class=\"sw\" "
	       "style=\"background:#8a96a3\"></span>spend</span><span><span "
	       "class=\"sw\" style=\"background:#2ca02c\"></span>saved by "
	       "cache reads</span></div>");
}

static void
lock_block(struct out *o, const cJSON *m, const struct statuspage_opts *op)
{
	const cJSON *l = cJSON_GetObjectItemCaseSensitive(m, "lock");
	char t[24], span[32];
	int64_t exp;

	put(o, "<dl>");
	put(o, "<div><dt>lock</dt><dd class=\"lock\">");
	if (cJSON_IsObject(l)) {
		esc(o, str(l, "provider_name"));
		put(o, " (");
		esc(o, str(l, "tag"));
		put(o, ")");
	} else {
		put(o, "none (unpinned)");
	}
	put(o, "</dd></div>");
	if (cJSON_IsObject(l)) {
		fmt_time((int64_t)num(l, "locked_at"), t);
		fmt_span(op->now - (int64_t)num(l, "locked_at"), span);
		putf(o, "<div><dt>locked since</dt><dd>%s UTC (%s)</dd></div>",
		     t, span);
		exp = (int64_t)num(l, "last_used") + op->lock_idle_seconds;
		fmt_time(exp, t);
		fmt_span(exp - op->now, span);
		putf(o, "<div><dt>expires if idle</dt><dd>%s UTC (%s%s%s)"
			"</dd></div>",
		     t, exp >= op->now ? "in " : "", span,
		     exp >= op->now ? "" : " ago");
	}
	fmt_time((int64_t)num(m, "scored_at"), t);
	putf(o, "<div><dt>scored</dt><dd>%s</dd></div>", t);
	putf(o, "<div><dt>requests (ok)</dt><dd>%.0f (%.0f)</dd></div>",
	     num(m, "requests"), num(m, "ok"));
	putf(o, "<div><dt>cache hit rate</dt><dd>%.1f%%</dd></div>",
	     100 * num(m, "cache_hit_rate"));
	putf(o, "<div><dt>spend</dt><dd>$%.6f</dd></div>", num(m, "spend_usd"));
	putf(o, "<div><dt>saved</dt><dd>$%.6f</dd></div>", num(m, "saved_usd"));
	put(o, "</dl>");
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m,
							    "scoring_error"))) {
		put(o, "<p class=\"err\">last scoring failed: ");
		esc(o, str(m, "scoring_error"));
		put(o, "</p>");
	}
}

static void
cand_table(struct out *o, const cJSON *m)
{
	static const char *const cols[] = {
		"provider",	"tag",	       "score",	     "throughput tok/s",
		"prompt $/M",	"completion $/M", "cache read $/M",
		"effective input $/M", "hit rate used", "hit source",
		"on tokens",	"uptime %"};
	const cJSON *c, *arr = cJSON_GetObjectItemCaseSensitive(m, "candidates");

	put(o, "<h3>Candidates (best first)</h3>");
	if (cJSON_GetArraySize(arr) == 0) {
		put(o, "<p class=\"muted\">not scored yet</p>");
		return;
	}
	thead(o, cols, sizeof(cols) / sizeof(cols[0]));
	cJSON_ArrayForEach(c, arr)
	{
		char tmp[64];

		put(o, "<tr>");
		td(o, cols[0], NULL, str(c, "provider_name"));
		td(o, cols[1], NULL, str(c, "tag"));
		/* Scores run to 1e8: whole numbers then, not 5.594e+07. */
		if (fabs(num(c, "score")) >= 1000)
			tdf(o, cols[2], "%.0f", num(c, "score"));
		else
			tdf(o, cols[2], "%.4g", num(c, "score"));
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
			    c, "has_throughput")))
			tdf(o, cols[3], "%.0f", num(c, "throughput"));
		else
			td(o, cols[3], "n", "-");
		tdf(o, cols[4], "%.4g", 1e6 * num(c, "prompt"));
		tdf(o, cols[5], "%.4g", 1e6 * num(c, "completion"));
		tdf(o, cols[6], "%.4g", 1e6 * num(c, "cache_read"));
		tdf(o, cols[7], "%.4g", 1e6 * num(c, "effective_input"));
		tdf(o, cols[8], "%.1f%%", 100 * num(c, "hit_rate"));
		td(o, cols[9], NULL, str(c, "hit_source"));
		snprintf(tmp, sizeof(tmp), "%.0f", num(c, "hit_tokens"));
		td(o, cols[10], "n", tmp);
		tdf(o, cols[11], "%.1f", num(c, "uptime"));
		put(o, "</tr>");
	}
	put(o, "</tbody></table>");
}

static void
breaker_table(struct out *o, const cJSON *m, const struct statuspage_opts *op)
{
	static const char *const cols[] = {"provider", "consecutive failures",
					   "cooling until", "reason"};
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(m, "failures");
	const cJSON *cd = cJSON_GetObjectItemCaseSensitive(m, "cooldowns");
	const cJSON *it, *c, *src;
	bool any = false;
	char t[24], span[32], tmp[96];
	int pass;

	put(o, "<h3>Breaker</h3>");
	/* Cooling providers first, then those with failures only. */
	for (pass = 0; pass < 2; pass++) {
		src = pass == 0 ? cd : f;
		cJSON_ArrayForEach(it, src)
		{
			if (it->string == NULL ||
			    (pass == 1 &&
			     cJSON_GetObjectItemCaseSensitive(cd, it->string)))
				continue;
			if (!any)
				thead(o, cols, 4);
			any = true;
			c = cJSON_GetObjectItemCaseSensitive(cd, it->string);
			put(o, "<tr>");
			td(o, cols[0], NULL, it->string);
			snprintf(tmp, sizeof(tmp), "%.0f", num(f, it->string));
			td(o, cols[1], "n", tmp);
			if (c != NULL) {
				fmt_time((int64_t)num(c, "until"), t);
				fmt_span((int64_t)num(c, "until") - op->now,
					 span);
				snprintf(tmp, sizeof(tmp), "%s (in %s)", t,
					 span);
				td(o, cols[2], "cool", tmp);
				td(o, cols[3], NULL, str(c, "reason"));
			} else {
				td(o, cols[2], NULL, "-");
				td(o, cols[3], NULL, "");
			}
			put(o, "</tr>");
		}
	}
	if (any)
		put(o, "</tbody></table>");
	else
		put(o, "<p class=\"muted\">no failures, no cooldowns</p>");
}

static void
history(struct out *o, const cJSON *m, const struct statuspage_opts *op)
{
	static const char *const hcols[] = {"day", "provider",
					    "prompt tokens", "cached tokens",
					    "hit rate"};
	static const char *const mcols[] = {"day", "requests", "spend $",
					    "uncached $", "saved $"};
	const cJSON *days = cJSON_GetObjectItemCaseSensitive(m, "days"), *p;
	const char *dayname[DAYS];
	char names[DAYS][11], tmp[64];
	double spend[DAYS], saved[DAYS], unc[DAYS], req[DAYS];
	bool any = false;
	int i;

	for (i = 0; i < DAYS; i++) {
		record_day(op->now - (int64_t)(DAYS - 1 - i) * 86400, names[i]);
		dayname[i] = names[i];
		spend[i] = saved[i] = unc[i] = req[i] = 0;
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					      days, names[i]))
		{
			spend[i] += num(p, "spend_usd");
			saved[i] += num(p, "saved_usd");
			unc[i] += num(p, "uncached_usd");
			req[i] += num(p, "requests");
		}
	}
	put(o, "<h3>Measured cache hit rate per day (UTC)</h3>");
	hit_chart(o, days, dayname);
	for (i = DAYS - 1; i >= 0; i--) {
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					      days, names[i]))
		{
			double pr = num(p, "prompt_tokens");

			if (p->string == NULL || pr <= 0)
				continue;
			if (!any)
				thead(o, hcols, 5);
			any = true;
			put(o, "<tr>");
			td(o, hcols[0], NULL, names[i]);
			td(o, hcols[1], NULL, p->string);
			tdf(o, hcols[2], "%.0f", pr);
			tdf(o, hcols[3], "%.0f", num(p, "cached_tokens"));
			snprintf(tmp, sizeof(tmp), "%.1f%%",
				 100 * num(p, "cached_tokens") / pr);
			td(o, hcols[4], "n", tmp);
			put(o, "</tr>");
		}
	}
	if (any)
		put(o, "</tbody></table>");
	put(o, "<h3>Spend and savings per day (UTC)</h3>");
	money_chart(o, spend, saved, dayname);
	any = false;
	for (i = DAYS - 1; i >= 0; i--) {
		if (req[i] <= 0)
			continue;
		if (!any)
			thead(o, mcols, 5);
		any = true;
		put(o, "<tr>");
		td(o, mcols[0], NULL, names[i]);
		tdf(o, mcols[1], "%.0f", req[i]);
		tdf(o, mcols[2], "%.6f", spend[i]);
		tdf(o, mcols[3], "%.6f", unc[i]);
		tdf(o, mcols[4], "%.6f", saved[i]);
		put(o, "</tr>");
	}
	if (any)
		put(o, "</tbody></table>");
}

static void
changes_table(struct out *o, const cJSON *m)
{
	static const char *const cols[] = {"UTC time", "from", "to",
					   "reason"};
	const cJSON *arr = cJSON_GetObjectItemCaseSensitive(m, "lock_changes");
	int i, n = cJSON_GetArraySize(arr);
	char t[24];

	put(o, "<h3>Recent lock changes</h3>");
	if (n == 0) {
		put(o, "<p class=\"muted\">none recorded</p>");
		return;
	}
	thead(o, cols, 4);
	for (i = n - 1; i >= 0; i--) {
		const cJSON *c = cJSON_GetArrayItem(arr, i);
		const char *from = str(c, "from"), *to = str(c, "to");

		fmt_time((int64_t)num(c, "at"), t);
		put(o, "<tr>");
		td(o, cols[0], NULL, t);
		td(o, cols[1], NULL, from[0] ? from : "(none)");
		td(o, cols[2], NULL, to[0] ? to : "(none)");
		td(o, cols[3], NULL, str(c, "reason"));
		put(o, "</tr>");
	}
	put(o, "</tbody></table>");
}

/* The requests of model m by API: "chat 12, messages 3"; "-" none. */
static void
api_mix(const cJSON *m, char *dst, size_t n)
{
	const cJSON *a;
	size_t k = 0;

	dst[0] = '\0';
	cJSON_ArrayForEach(a, cJSON_GetObjectItemCaseSensitive(m, "by_api"))
	{
		if (a->string == NULL || k >= n)
			continue;
		k += (size_t)snprintf(dst + k, n - k, "%s%s %.0f",
				      k ? ", " : "", a->string,
				      num(a, "requests"));
	}
	if (dst[0] == '\0')
		snprintf(dst, n, "-");
}

/* What each API brought to model m (by_api in docs/state.md). */
static void
api_table(struct out *o, const cJSON *m)
{
	static const char *const cols[] = {
		"API", "requests", "ok", "prompt tokens", "cached tokens",
		"cache writes", "completion tokens", "spend $",
		"of it estimated $"};
	const cJSON *a, *by = cJSON_GetObjectItemCaseSensitive(m, "by_api");

	if (cJSON_GetArraySize(by) == 0)
		return;
	put(o, "<h3>By API</h3>");
	thead(o, cols, sizeof(cols) / sizeof(cols[0]));
	cJSON_ArrayForEach(a, by)
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(a, "tokens");

		if (a->string == NULL)
			continue;
		put(o, "<tr>");
		td(o, cols[0], NULL, a->string);
		tdf(o, cols[1], "%.0f", num(a, "requests"));
		tdf(o, cols[2], "%.0f", num(a, "ok"));
		tdf(o, cols[3], "%.0f", num(t, "prompt"));
		tdf(o, cols[4], "%.0f", num(t, "cached"));
		tdf(o, cols[5], "%.0f", num(t, "cache_write"));
		tdf(o, cols[6], "%.0f", num(t, "completion"));
		tdf(o, cols[7], "%.6f", num(a, "cost_usd"));
		tdf(o, cols[8], "%.6f", num(a, "cost_estimated_usd"));
		put(o, "</tr>");
	}
	put(o, "</tbody></table>");
}

static void
summary(struct out *o, const cJSON *models)
{
	static const char *const cols[] = {"model", "lock", "requests",
					   "by API", "cache hit rate",
					   "spend $", "saved $"};
	const cJSON *m, *l;
	char mix[160];

	put(o, "<section><h2>Models</h2>");
	if (cJSON_GetArraySize(models) == 0) {
		put(o, "<p class=\"muted\">no model seen yet</p></section>");
		return;
	}
	thead(o, cols, 7);
	cJSON_ArrayForEach(m, models)
	{
		l = cJSON_GetObjectItemCaseSensitive(m, "lock");
		api_mix(m, mix, sizeof(mix));
		put(o, "<tr>");
		td(o, cols[0], NULL, m->string);
		td(o, cols[1], NULL,
		   cJSON_IsObject(l) ? str(l, "tag") : "(none)");
		tdf(o, cols[2], "%.0f", num(m, "requests"));
		td(o, cols[3], NULL, mix);
		tdf(o, cols[4], "%.1f%%", 100 * num(m, "cache_hit_rate"));
		tdf(o, cols[5], "%.6f", num(m, "spend_usd"));
		tdf(o, cols[6], "%.6f", num(m, "saved_usd"));
		put(o, "</tr>");
	}
	put(o, "</tbody></table></section>");
}

/* A budget and what is left of it: "$1.2345 of $5.0000", or "-". */
static void
budget_text(const cJSON *k, const char *budget, const char *left, char *dst,
	    size_t n)
{
	if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(k, budget))) {
		snprintf(dst, n, "-");
		return;
	}
	snprintf(dst, n, "$%.4f of $%.4f", num(k, left), num(k, budget));
}

/* True when a row's team name t is one of the figures a Keys cell
 * shows together: the tokens ("<type>_tokens") or the refusals
 * ("refused_<reason>"); *part the name that shows. */
static bool
team_group(const char *t, bool refusals, char *part, size_t n)
{
	size_t len = t != NULL ? strlen(t) : 0;

	if (len == 0)
		return false;
	if (refusals) {
		if (len <= 8 || strncmp(t, "refused_", 8) != 0)
			return false;
		snprintf(part, n, "%s", t + 8);
		return true;
	}
	if (len <= 7 || strcmp(t + len - 7, "_tokens") != 0)
		return false;
	snprintf(part, n, "%.*s", (int)(len - 7), t);
	return true;
}

/* One Keys cell of the rows of a group (team_group) of window w, as
 * "a / b / c" into vals, and (head not NULL) its heading into head:
 * "<pre>a / b / c<post>".  The rows come from the ledger's table, so a
 * row given a team name shows without a change here. */
static void
team_cell(const cJSON *w, bool refusals, char *head, size_t hn,
	  const char *pre, const char *post, char *vals, size_t vn)
{
	char part[64];
	size_t h = 0, v = 0, shown = 0;
	int i;

	if (head != NULL)
		h = (size_t)snprintf(head, hn, "%s", pre);
	vals[0] = '\0';
	for (i = 0; i < LX_N; i++) {
		const char *sep = shown > 0 ? " / " : "";

		if (!team_group(ledger_fields[i].team, refusals, part,
				sizeof(part)))
			continue;
		shown++;
		if (head != NULL && h < hn)
			h += (size_t)snprintf(head + h, hn - h, "%s%s", sep,
					      part);
		if (v < vn)
			v += (size_t)snprintf(vals + v, vn - v, "%s%.0f", sep,
					      num(w, ledger_fields[i].team));
	}
	if (head != NULL && h < hn)
		snprintf(head + h, hn - h, "%s", post);
}

/* The team keys (/stats "keys"): this month's use, today's spend and
 * what is left of the budgets. */
static void
keys_table(struct out *o, const cJSON *stats)
{
	char tok_head[160], ref_head[160];
	const char *cols[] = {
		"key", "state", "models", "requests (month)", tok_head,
		"spend $ today", "spend $ month", "saved $ month",
		"left of day budget", "left of month budget", ref_head,
		"last used"};
	const cJSON *keys = cJSON_GetObjectItemCaseSensitive(stats, "keys");
	const cJSON *k, *g, *mo, *dy;
	char models[256], b[160], t[24];
	size_t n;

	if (!cJSON_IsObject(keys))
		return;
	team_cell(NULL, false, tok_head, sizeof(tok_head), "", " tokens", b,
		  sizeof(b));
	team_cell(NULL, true, ref_head, sizeof(ref_head), "refused ", "", b,
		  sizeof(b));
	put(o, "<section><h2>Keys</h2>");
	if (cJSON_IsString(cJSON_GetObjectItemCaseSensitive(stats,
							    "keys_error"))) {
		put(o, "<p class=\"err\">keys store unreadable: ");
		esc(o, str(stats, "keys_error"));
		put(o, "</p>");
	}
	if (keys->child == NULL) {
		put(o, "<p class=\"muted\">no team key yet (orgw-score key "
		       "add NAME)</p></section>");
		return;
	}
	thead(o, cols, sizeof(cols) / sizeof(cols[0]));
	cJSON_ArrayForEach(k, keys)
	{
		mo = cJSON_GetObjectItemCaseSensitive(k, "month");
		dy = cJSON_GetObjectItemCaseSensitive(k, "today");
		models[0] = '\0';
		n = 0;
		cJSON_ArrayForEach(g, cJSON_GetObjectItemCaseSensitive(k,
								       "models"))
		{
			if (cJSON_IsString(g) && n < sizeof(models))
				n += (size_t)snprintf(models + n,
						      sizeof(models) - n,
						      "%s%s", n ? ", " : "",
						      g->valuestring);
		}
		put(o, "<tr>");
		td(o, cols[0], NULL, k->string);
		td(o, cols[1], NULL, str(k, "state"));
		td(o, cols[2], NULL, models);
		tdf(o, cols[3], "%.0f", num(mo, "requests"));
		team_cell(mo, false, NULL, 0, NULL, NULL, b, sizeof(b));
		td(o, cols[4], "n", b);
		tdf(o, cols[5], "%.6f", num(dy, "spend_usd"));
		tdf(o, cols[6], "%.6f", num(mo, "spend_usd"));
		tdf(o, cols[7], "%.6f", num(mo, "saved_usd"));
		budget_text(k, "budget_usd_day", "remaining_usd_day", b,
			    sizeof(b));
		td(o, cols[8], "n", b);
		budget_text(k, "budget_usd_month", "remaining_usd_month", b,
			    sizeof(b));
		td(o, cols[9], "n", b);
		team_cell(mo, true, NULL, 0, NULL, NULL, b, sizeof(b));
		td(o, cols[10], "n", b);
		if (num(k, "last_used") > 0)
			fmt_time((int64_t)num(k, "last_used"), t);
		else
			snprintf(t, sizeof(t), "never");
		td(o, cols[11], NULL, t);
		put(o, "</tr>");
	}
	put(o, "</tbody></table></section>");
}

/* The recent conversations (/stats "conversations", newest first) and
 * per model its providers' conversations and pressure. */
static void
conv_section(struct out *o, const cJSON *stats,
	     const struct statuspage_opts *op)
{
	static const char *const cols[] = {"conversation", "model",
					   "provider", "turns", "cached",
					   "saved $", "last seen",
					   "last break"};
	static const char *const pcols[] = {"model", "provider",
					    "active conversations",
					    "provider 429s", "pressure"};
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(stats,
							     "conversations");
	const cJSON *models = cJSON_GetObjectItemCaseSensitive(stats, "models");
	const cJSON *r, *m, *p, *cv;
	const char *w;
	char t[24], span[32], tmp[96];
	bool any = false;

	if (!cJSON_IsArray(rows))
		return;
	put(o, "<section><h2>Conversations</h2>");
	if (cJSON_GetArraySize(rows) == 0)
		put(o, "<p class=\"muted\">no conversation yet</p>");
	else
		thead(o, cols, sizeof(cols) / sizeof(cols[0]));
	cJSON_ArrayForEach(r, rows)
	{
		put(o, "<tr>");
		td(o, cols[0], NULL, str(r, "id"));
		td(o, cols[1], NULL, str(r, "model"));
		td(o, cols[2], NULL, str(r, "provider"));
		tdf(o, cols[3], "%.0f", num(r, "turns"));
		tdf(o, cols[4], "%.1f%%", 100 * convlist_row_cached_share(r));
		tdf(o, cols[5], "%.6f", num(r, "saved"));
		fmt_time((int64_t)num(r, "last_seen"), t);
		td(o, cols[6], NULL, t);
		w = convlist_row_last_words(r);
		td(o, cols[7], w ? NULL : "muted", w ? w : "no break");
		put(o, "</tr>");
	}
	if (cJSON_GetArraySize(rows) > 0)
		put(o, "</tbody></table>");
	put(o, "<h3>Providers and pressure</h3>");
	cJSON_ArrayForEach(m, models)
	{
		cv = cJSON_GetObjectItemCaseSensitive(m, "conversations");
		cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(
					      cv, "providers"))
		{
			if (!any)
				thead(o, pcols, 5);
			any = true;
			put(o, "<tr>");
			td(o, pcols[0], NULL, m->string);
			td(o, pcols[1], NULL, p->string);
			tdf(o, pcols[2], "%.0f", num(p, "active"));
			tdf(o, pcols[3], "%.0f", num(p, "provider_429s"));
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
				    p, "under_pressure"))) {
				fmt_time((int64_t)num(p, "pressure_until"), t);
				fmt_span((int64_t)num(p, "pressure_until") -
						 op->now,
					 span);
				snprintf(tmp, sizeof(tmp),
					 "no new conversations until %s "
					 "(in %s)",
					 t, span);
				td(o, pcols[4], "cool", tmp);
			} else {
				td(o, pcols[4], NULL, "none");
			}
			put(o, "</tr>");
		}
	}
	if (any)
		put(o, "</tbody></table>");
	else
		put(o, "<p class=\"muted\">no provider under pressure, no "
		       "active conversation</p>");
	put(o, "</section>");
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
