/*
 * statuspage_routing.c - the status page's sections of a model's routing
 * (see statuspage.c): its lock, its candidates, its breakers, its last
 * days, its recent changes and the APIs it is asked through, and the
 * summary table of every model.  Pure, like statuspage.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "record.h"
#include "statuspage.h"
#include "statuspage_impl.h"

void
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

void
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

void
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

void
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

void
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
void
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

void
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
