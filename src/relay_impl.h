/*
 * relay_impl.h - what the relay's files (relay.c, relay_*.c) share and
 * no other file includes (make check-layers): the request's struct
 * relay, its current attempt and its conversation, and the functions one
 * of those files calls in another.  Each function's contract is at its
 * definition.
 */
#ifndef ORGW_RELAY_IMPL_H
#define ORGW_RELAY_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "api.h"
#include "buf.h"
#include "conv.h"
#include "failover.h"
#include "fingerprint.h"
#include "orgw.h"
#include "record.h"
#include "reqval.h"
#include "route.h"
#include "sse.h"
#include "state.h"
#include "teamkey.h"

struct orgw_conf;
struct orgw_io;
struct relay_in;

#define CONNECT_TIMEOUT_MS 10000

struct attempt {
	long status;
	char ctype[128];
	int retry_after;
	bool is_sse;
	struct buf body;	/* non-SSE body (or an error body) */
	struct sse sse;
	int64_t t_start;
	/* Stream: the first and the last token (an event with content).
	 * Non-streamed: the first and the last body byte, padding
	 * included.  0 when none came yet.  Silence is measured from
	 * t_last (a stall) or from t_start (a timeout). */
	int64_t t_first, t_last;
	bool nonws;		/* non-streamed: a body byte that is not
				 * whitespace padding came */
	size_t tree_bytes;	/* non-streamed: its cJSON tree at most
				 * (jsonscan_tree_bytes), 0 unparsed */
	bool content;		/* data relayed in this attempt */
	bool done_line;		/* a [DONE] came after the end event */
	char gen_id[128];	/* upstream's X-Generation-Id, "" none */
	unsigned after_end;	/* events dropped after the stream's end */
	enum failover_abort why;
	struct api_answer ans;	/* what the answer said (api.h) */
};

/* A conversation's turn (conv.h): its key, what the route said of it,
 * its prompt's fingerprints and the body edits it asks for. */
struct relay_conv {
	bool on;			/* the request has a conversation */
	struct conv_key key;
	char show[CONV_SHOW_MAX];
	struct state_conv route;	/* the route transaction's answer */
	struct state_conv_turn turn;	/* the finish's */
	struct fp_list fp;		/* owned */
	bool has_breakpoint;		/* the body has a cache breakpoint */
	bool only_new;			/* Responses with previous_response_id */
	char explicit_tag[ORGW_TAG_MAX]; /* the pin route.explicit_cache is
					  * about */
	size_t n_items;			/* Responses: the input's items */
	size_t first_bound;		/* ... the index of its first
					 * provider-bound reasoning item,
					 * CONVBODY_ALL none */
	char *input;			/* input without the provider-bound
					 * reasoning items below input_limit
					 * (malloc'd), once made */
	size_t dropped;			/* items it leaves out */
	size_t input_limit;
	bool input_made;
	bool all;			/* attempts leave out every such item
					 * (moved, or upstream could not read
					 * them) */
	bool all_sent;			/* ... the last attempt did */
	bool retried;			/* retried for invalid_encrypted */
	size_t dropped_sent;		/* items left out of what was sent */
};

struct relay {
	const struct orgw_conf *c;
	const struct orgw_io *io;
	const struct relay_in *in;
	const struct api *api;
	struct api_req req;
	struct state_route route;
	bool unknown;		/* an id OpenRouter does not know: counted
				 * under STATE_OTHER_MODEL */
	char used_tag[ORGW_TAG_MAX];	/* pin of the last attempt, "" none */
	enum route_kind used_route;	/* route of the last attempt */
	bool used_conv;			/* ... pinned to its conversation's
					 * provider, not the lock */
	char *fwd;		/* forwarded body (cJSON allocated) */
	int attempts;
	bool head_sent;		/* the client has its header block */
	bool json_head;		/* ... of a non-streamed 200: whitespace and
				 * then one JSON document follow */
	int64_t t_wrote;	/* the last write to the client */
	size_t held_max;	/* bound of what is held back (api.h) */
	struct buf held;	/* comments held before the header block */
	struct buf pending;	/* events held until a token follows */
	struct attempt a;
	struct failover_verdict v;	/* what the last attempt means */
	struct stats_delta d;
	char generation_id[128];	/* the last attempt's, "" none */
	int64_t t0;
	int final_status;
	bool ok;		/* a success, for the stats and the breaker */
	const char *result;	/* outcome= in the log */
	int rc;			/* what relay_handle returns */
	struct relay_conv cv;
};

/* relay.c */
const char *pinned_tag(const struct relay *rl);
int team_refuse(struct relay *rl, enum teamkey_verdict v);

/* relay_route.c */
void route_request(struct relay *rl);

/* relay_conv.c */
int conv_edits(struct relay *rl, struct reqval_edits *ed);
bool conv_429(struct relay *rl);
bool conv_invalid_encrypted(struct relay *rl);
void conv_prepare(struct relay *rl);

/* relay_attempt.c */
void provider_failed(struct relay *rl, enum failover_kind kind);
bool upstream_url(const struct orgw_conf *c, const struct relay_in *in,
		  const char *path, char *dst, size_t n);
int attempt_loop(struct relay *rl);

/* relay_stream.c: upstream's callbacks (upstream.h) and the writes */
void orgw_headers(const struct relay *rl, char *dst, size_t n);
int send_stream_head(struct relay *rl);
int send_now(struct relay *rl, const char *p, size_t n);
size_t padding_len(const char *p, size_t n);
int keep_alive(struct relay *rl, int64_t now);
void on_headers(void *arg, long status, const char *ctype, int retry_after,
		const char *generation_id);
int on_data(void *arg, const char *p, size_t n);
int on_tick(void *arg, int64_t now);
void on_client_gone(void *arg);

/* relay_reply.c */
int relay_gateway_error(struct relay *rl, int status, const char *code,
			const char *msg);
void answer(struct relay *rl);

/* relay_account.c */
void log_request(const struct relay *rl, const char *outcome, int64_t ttfb,
		 int64_t total);
int64_t out_limit(const struct api_req *q);
void bookkeep(struct relay *rl);

#endif
