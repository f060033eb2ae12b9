/*
 * statuspage_keys.c - the status page's table of team keys (see
 * statuspage.c): each key's state, limits, budgets and what it used
 * today and this month.  Pure, like statuspage.c.
 */
#include <stdio.h>
#include <string.h>

#include "statuspage_impl.h"

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
void
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
