/*
 * relay_reply.c - what the client gets after the last attempt (answer):
 * a non-streamed body as it came, the missing end of a stream, or an
 * error in the API's shape (api.h): orgw's own HTTP error before
 * anything was sent, an error event inside a stream that began, an
 * error document inside a non-streamed 200 already committed
 * (docs/design.md sections 5, 11).  relay_error() is the gateway's too.
 */
#include <string.h>

#include <cJSON.h>

#include "api.h"
#include "clock.h"
#include "failover.h"
#include "relay.h"
#include "relay_impl.h"

/* Writes text (cJSON-allocated, freed here; NULL: out of memory) to the
 * client and flushes; 0, or -1 when it is gone. */
static int
send_text(struct relay *rl, char *text)
{
	int rc = -1;

	if (text != NULL)
		rc = send_now(rl, text, strlen(text));
	cJSON_free(text);
	return rc;
}

/* Ends a stream broken after content with the API's error event (no
 * normal end after it, docs/design.md 5 and 11).  status is what the failure
 * stands for (502, 504, or the upstream error's). */
static void
send_stream_error(struct relay *rl, int status, const char *code,
		  const char *msg)
{
	if (send_stream_head(rl) != 0)
		return;
	(void)send_text(rl, rl->api->stream_error(status, code, msg,
						  rl->req.model, clock_now_s(),
						  &rl->a.ans));
}

/* The gateway's own error when no upstream response can be relayed, in
 * the API's shape: its HTTP error, or inside an answer already
 * committed. */
static int
error_reply(const struct orgw_io *io, const struct api *api, int status,
	    const char *type, const char *code, const char *param,
	    const char *msg, const char *extra, const char *request_id)
{
	char *s = api->error_body(status, type, code, param, msg,
				  request_id);
	int rc;

	if (s == NULL)
		/* Out of memory: a fixed body still tells the client. */
		return http_json(io, 500, NULL, HTTP_OOM_JSON,
				 sizeof(HTTP_OOM_JSON) - 1);
	rc = http_json(io, status, extra, s, strlen(s));
	cJSON_free(s);
	return rc;
}

int
relay_error(const struct orgw_io *io, const struct api *api, int status,
	    const char *type, const char *code, const char *param,
	    const char *msg, const char *extra)
{
	return error_reply(io, api, status, type, code, param, msg, extra,
			   NULL);
}

int
relay_gateway_error(struct relay *rl, int status, const char *code,
		    const char *msg)
{
	const char *id = rl->a.gen_id[0] ? rl->a.gen_id : NULL;
	char extra[512];

	if (rl->json_head)
		return send_text(rl, rl->api->committed_error(
					     status, code, msg, rl->req.model,
					     clock_now_s(), id));
	if (rl->head_sent) {
		send_stream_error(rl, status, code, msg);
		return 0;
	}
	rl->final_status = status;
	orgw_headers(rl, extra, sizeof(extra));
	return error_reply(rl->io, rl->api, status, "upstream_error", code,
			   NULL, msg, extra, id);
}

/* The status an error event or an error in a 200 stands for, when it
 * goes to the client as an HTTP status of its own. */
static int
error_status(const struct attempt *a)
{
	return a->ans.err_code >= 400 && a->ans.err_code <= 599 ?
		       (int)a->ans.err_code :
		       502;
}

/* Relays a finished non-streamed upstream response (or error body). */
static int
relay_body(struct relay *rl)
{
	struct attempt *a = &rl->a;
	const char *p = a->body.p ? a->body.p : "";
	size_t len = a->body.len, pad;
	char extra[512];
	int status = (int)(a->status ? a->status : 502);

	/* OpenRouter pads slow responses with whitespace (docs/upstream.md 5);
	 * clients' JSON parsers must not see it. */
	pad = padding_len(p, len);
	p += pad;
	len -= pad;
	/* A redirect is not followed and has no meaning for the client
	 * (no Location is relayed): a gateway error. */
	if (status >= 300 && status <= 399)
		return relay_gateway_error(rl, 502, "upstream_error",
					   "upstream answered with a redirect");
	if (status >= 200 && status <= 299 && a->ans.err_msg[0] != '\0') {
		/* An error inside a 200 (body or SSE event): the client
		 * gets it with the status it stands for, not as a 200. */
		status = error_status(a);
		if (a->is_sse || len == 0)
			return relay_gateway_error(rl, status, "upstream_error",
						   a->ans.err_msg);
	}
	if (rl->json_head)	/* committed: the document, as it came */
		return len ? send_now(rl, p, len) :
			     relay_gateway_error(rl, status, "upstream_error",
						 "upstream returned an empty "
						 "response");
	if (rl->head_sent) {
		/* A stream already began (keep-alives); say it in-band. */
		send_stream_error(rl, status, "upstream_error",
				  a->ans.err_msg[0] ? a->ans.err_msg :
						      "upstream request failed");
		return 0;
	}
	if (len == 0)
		return relay_gateway_error(rl, status, "upstream_error",
					   "upstream returned an empty "
					   "response");
	rl->final_status = status;
	orgw_headers(rl, extra, sizeof(extra));
	return http_json(rl->io, status, extra, p, len);
}

/* The answer when the last attempt failed and no attempt is left. */
static int
relay_failure(struct relay *rl)
{
	const struct attempt *a = &rl->a;

	if (a->status >= 300 && !a->is_sse && a->body.len > 0)
		return relay_body(rl);
	if (rl->v.kind == FK_TIMEOUT)
		return relay_gateway_error(rl, 504, "upstream_timeout",
					   "upstream did not answer in time");
	return relay_gateway_error(rl, 502, "upstream_unavailable",
				   a->ans.err_msg[0] ? a->ans.err_msg :
						       "upstream failed");
}

/* Answers the client after the last attempt's verdict. */
void
answer(struct relay *rl)
{
	struct attempt *a = &rl->a;
	const char *close = rl->api->stream_close;

	switch (rl->v.out) {
	case FO_OK:
		rl->ok = true;
		rl->result = "ok";
		if (!a->is_sse)
			rl->rc = relay_body(rl);
		else if (!a->ans.done && close[0] != '\0')
			/* Complete after its end event (docs/design.md 5, 11): the
			 * last event upstream did not send. */
			rl->rc = send_now(rl, close, strlen(close));
		break;
	case FO_DEADLINE:
		failover_count(&rl->d, FK_TIMEOUT);
		rl->result = "request_timeout";
		rl->rc = relay_gateway_error(rl, 504, "request_timeout",
					     "the request took longer than "
					     "REQUEST_TIMEOUT_MS");
		break;
	case FO_CLIENT:
	case FO_429:
		rl->result = rl->v.out == FO_429 ? "rate_limited" :
						   "upstream_4xx";
		rl->rc = relay_body(rl);
		break;
	case FO_GONE:
		rl->d.eabort = 1;
		rl->result = "client_abort";
		rl->final_status = 499;
		rl->rc = -1;
		break;
	case FO_MID:
		failover_count(&rl->d, rl->v.kind);
		provider_failed(rl, rl->v.kind);
		send_stream_error(rl,
				  a->why == AB_STALL ? 504 :
				  a->why == AB_ERROR_EVENT ? error_status(a) :
							     502,
				  "mid_stream_failure", a->ans.err_msg);
		rl->result = "mid_stream";
		break;
	case FO_FAIL:
		rl->result = "failed";
		rl->rc = relay_failure(rl);
		break;
	}
}
