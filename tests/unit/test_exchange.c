/*
 * An exchange whose HTTP side sets the recorder only when its answer
 * streams (exchange_ops.opening): each message is offered first while
 * there is no recorder, with its length and whether it is the answer that
 * ends the exchange; a recorder set then numbers that very message, and
 * the answered request keeps the event that carried it. A fake recorder
 * stands for the session's.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "jsonrpc/jsonrpc.h"
#include "session/exchange.h"

struct side {
	struct exchange *ex;
	bool open_on_offer; /* the HTTP side streams: sets the recorder */
	bool open_on_last;  /* ... even for the answer alone */
	int offers;
	size_t offer_len[4];
	bool offer_last[4];
	int delivered;
	char ids[4][EXCHANGE_EVENT_ID_MAX]; /* "": delivered unrecorded */
	char texts[4][256];
	int finished;
	uint64_t recorded; /* events the fake recorder numbered */
};

static const char *fake_record(void *rctx, uint64_t stream, json_t *msg,
			       char *text, size_t *len, char *id,
			       uint64_t *event, char **spill)
{
	struct side *sd = rctx;
	cr_assert_null(msg, "an unopened exchange passes text on");
	*event = ++sd->recorded;
	snprintf(id, EXCHANGE_EVENT_ID_MAX, "%llu-%llu",
		 (unsigned long long)stream, (unsigned long long)*event);
	*spill = text; /* not kept: freed by the exchange after delivery */
	return text;
}

static void side_opening(void *ctx, size_t len, bool last)
{
	struct side *sd = ctx;
	cr_assert_lt(sd->offers, 4);
	sd->offer_len[sd->offers] = len;
	sd->offer_last[sd->offers] = last;
	sd->offers++;
	if (sd->open_on_offer && (sd->open_on_last || !last))
		exchange_set_recorder(sd->ex, fake_record, sd, 7);
}

static void side_deliver(void *ctx, json_t *msg, const char *event_id,
			 const char *data, size_t len)
{
	struct side *sd = ctx;
	cr_assert_lt(sd->delivered, 4);
	cr_assert_null(msg, "an unopened exchange passes text on");
	snprintf(sd->ids[sd->delivered], EXCHANGE_EVENT_ID_MAX, "%s",
		 event_id ? event_id : "");
	snprintf(sd->texts[sd->delivered], 256, "%.*s", (int)len, data);
	sd->delivered++;
}

static void side_finish(void *ctx)
{
	((struct side *)ctx)->finished++;
}

static const struct exchange_ops side_ops = {
	.deliver = side_deliver,
	.finish = side_finish,
	.opening = side_opening,
};

/* One expected tools/call with id 5. */
static struct exchange *side_new(struct side *sd)
{
	memset(sd, 0, sizeof *sd);
	sd->ex = exchange_new(&side_ops, sd, 1);
	json_t *id = json_integer(5);
	exchange_expect(sd->ex, id, "tools/call");
	json_decref(id);
	return sd->ex;
}

static const char answer5[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}";

static char *dup_text(const char *s)
{
	char *t = malloc(strlen(s) + 1);
	strcpy(t, s);
	return t;
}

Test(exchange, the_answer_alone_goes_unrecorded_when_its_side_does_not_open)
{
	struct side sd;
	struct exchange *ex = side_new(&sd);
	exchange_send_text(ex, dup_text(answer5), strlen(answer5), true);
	cr_assert_eq(sd.offers, 1);
	cr_assert_eq(sd.offer_len[0], strlen(answer5));
	cr_assert(sd.offer_last[0], "the answer that ends the exchange");
	cr_assert_eq(sd.recorded, 0, "nothing numbered nor kept");
	cr_assert_eq(sd.delivered, 1);
	cr_assert_str_eq(sd.ids[0], "", "no event id");
	cr_assert_str_eq(sd.texts[0], answer5);
	cr_assert_eq(sd.finished, 1);
	size_t n;
	const struct exchange_req *q = exchange_reqs(ex, &n);
	cr_assert_eq(n, 1);
	cr_assert(q[0].answered);
	cr_assert_eq(q[0].event, 0, "no event carried it");
	exchange_unref(ex);
}

Test(exchange, progress_first_opens_the_recorder_before_it_is_numbered)
{
	struct side sd;
	struct exchange *ex = side_new(&sd);
	sd.open_on_offer = true;
	json_t *note = jr_notification(
		"notifications/progress",
		json_pack("{s:s,s:i}", "progressToken", "p", "progress", 1));
	char *note_text = json_dumps(note, JSON_COMPACT);
	exchange_send(ex, note);
	cr_assert_eq(sd.offers, 1);
	cr_assert_not(sd.offer_last[0], "progress does not end it");
	cr_assert_eq(sd.offer_len[0], strlen(note_text),
		     "a parsed message is offered with its text's length");
	cr_assert_eq(sd.delivered, 1);
	cr_assert_str_eq(sd.ids[0], "7-1", "the first message is numbered");
	cr_assert_str_eq(sd.texts[0], note_text);
	/* Recorded from now on: the answer is not offered again. */
	exchange_send_text(ex, dup_text(answer5), strlen(answer5), true);
	cr_assert_eq(sd.offers, 1);
	cr_assert_str_eq(sd.ids[1], "7-2");
	cr_assert_eq(sd.finished, 1);
	size_t n;
	const struct exchange_req *q = exchange_reqs(ex, &n);
	cr_assert(q[0].answered);
	cr_assert_eq(q[0].event, 2, "the event that carried the answer");
	free(note_text);
	json_decref(note);
	exchange_unref(ex);
}

Test(exchange, an_answer_that_streams_keeps_the_event_that_carried_it)
{
	/* A large answer alone: its side opens the stream for it. */
	struct side sd;
	struct exchange *ex = side_new(&sd);
	sd.open_on_offer = sd.open_on_last = true;
	exchange_send_text(ex, dup_text(answer5), strlen(answer5), true);
	cr_assert_eq(sd.offers, 1);
	cr_assert_str_eq(sd.ids[0], "7-1");
	size_t n;
	const struct exchange_req *q = exchange_reqs(ex, &n);
	cr_assert_eq(q[0].event, 1);
	exchange_unref(ex);
}

Test(exchange, a_detached_exchange_offers_nothing)
{
	struct side sd;
	struct exchange *ex = side_new(&sd);
	sd.open_on_offer = true;
	exchange_detach(ex);
	exchange_send_text(ex, dup_text(answer5), strlen(answer5), true);
	cr_assert_eq(sd.offers, 0, "nobody receives it: nothing to decide");
	cr_assert_eq(sd.delivered, 0);
	exchange_unref(ex);
}

Test(exchange, without_the_op_messages_go_as_before)
{
	static const struct exchange_ops plain = {.deliver = side_deliver,
						  .finish = side_finish};
	struct side sd;
	memset(&sd, 0, sizeof sd);
	struct exchange *ex = exchange_new(&plain, &sd, 1);
	exchange_send_text(ex, dup_text(answer5), strlen(answer5), true);
	cr_assert_eq(sd.offers, 0);
	cr_assert_eq(sd.delivered, 1);
	cr_assert_eq(sd.finished, 1);
	exchange_unref(ex);
}
