/*
 * statuspage_chart.c - the status page's two SVG charts of a model's
 * last days (see statuspage.c): its providers' cache hit rates, and its
 * spend with what cache reads saved.  Pure, like statuspage.c.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "statuspage_impl.h"

#define MAX_PROVIDERS 16

/* Chart geometry (SVG user units; the SVG scales to the page width). */
#define CH_W 640
#define CH_H 180
#define CH_L 44
#define CH_R 630
#define CH_T 10
#define CH_B 150

static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c",
				      "#9467bd", "#ff7f0e", "#8c564b",
				      "#e377c2", "#17becf"};
#define N_COLOURS (sizeof(colours) / sizeof(colours[0]))

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
void
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
void
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
