/*
 * statuspage_conv.c - the status page's section of conversations (see
 * statuspage.c): the recent ones, newest first, and per model its
 * providers' conversations and pressure.  Pure, like statuspage.c.
 */
#include <stdio.h>
#include <string.h>

#include "convlist.h"
#include "statuspage.h"
#include "statuspage_impl.h"

/* The recent conversations (/stats "conversations", newest first) and
 * per model its providers' conversations and pressure. */
void
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
