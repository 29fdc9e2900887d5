/*
 * `mcpvisor top`: a live view of the runtime's servers and figures,
 * redrawn about once a second over the Unix socket, in plain ANSI on the
 * terminal's alternate screen; `q` quits. Not on a terminal, it prints the
 * table once. Owns the terminal while it runs and gives it back as it
 * found it, also on SIGINT, SIGTERM, SIGHUP and SIGQUIT (^\), and while it
 * is stopped (^Z), taking it again when continued.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/top_view.h"
#include "util/buf.h"
#include "util/clock.h"
#include "util/escape.h"

#define TOP_REFRESH_MS 1000
/* A runtime that takes longer than this to answer is shown as not
 * answering; the view keeps its keys and its clock meanwhile. */
#define TOP_TIMEOUT "2s"
#define TOP_PATH "/metrics?format=json"
/* The last message the client wrote, shown in the view. */
#define TOP_NOTE_MAX 240

static void top_usage(FILE *f)
{
	fprintf(f,
		"usage: mcpvisor top [--json] [--home DIR]\n"
		"\n"
		"A live view of the runtime, redrawn about once a second: each "
		"server with\n"
		"its state, scope, instances, sessions, calls in flight, "
		"calls, calls per\n"
		"second, p50 and p99 latency over the last minute, errors, "
		"restarts and the\n"
		"memory of its processes; the runtime's own memory, "
		"connections and sessions.\n"
		"q quits. When stdout is not a terminal it prints the table "
		"once; --json\n"
		"prints the figures once as JSON. Over the Unix socket only; "
		"the same\n"
		"figures in Prometheus text: GET /metrics on that socket.\n");
}

/* ---- the terminal ---- */

static volatile sig_atomic_t top_quit, top_resized, top_stop, top_cont;

static struct {
	bool raw, screen;
	struct termios saved, mode; /* the terminal's own; ours */
	int saved_stderr;
	FILE *note; /* what the client prints goes here, not on the view */
} top_term = {.saved_stderr = -1};

/* Only flags: the loop acts on them (poll returns on a signal), never
 * in the middle of writing a view. */
static void top_signal_cb(int sig)
{
	switch (sig) {
	case SIGWINCH:
		top_resized = 1;
		break;
	case SIGTSTP:
		top_stop = 1;
		break;
	case SIGCONT:
		top_cont = 1;
		break;
	default:
		top_quit = 1;
	}
}

static void top_write(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = write(STDOUT_FILENO, s, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* The terminal as it was: main screen, cursor, line discipline. */
static void top_term_leave(void)
{
	if (top_term.screen) {
		static const char leave[] = "\x1b[?25h\x1b[?1049l";
		top_write(leave, sizeof leave - 1);
		top_term.screen = false;
	}
	if (top_term.raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &top_term.saved);
		top_term.raw = false;
	}
}

/* Keys one at a time and not echoed (^C, ^Z and ^\ still signal), on the
 * alternate screen. Again after a stop: the modes the terminal had then
 * are the ones to give back. Continued from a stop it did not see
 * (SIGSTOP), while raw: its mode again, which a shell may have reset. */
static void top_term_enter(void)
{
	if (top_term.raw) {
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &top_term.mode);
	} else if (isatty(STDIN_FILENO) &&
		   tcgetattr(STDIN_FILENO, &top_term.saved) == 0) {
		top_term.mode = top_term.saved;
		top_term.mode.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		top_term.mode.c_cc[VMIN] = 0;
		top_term.mode.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &top_term.mode) == 0)
			top_term.raw = true;
	}
	static const char enter[] = "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J";
	top_write(enter, sizeof enter - 1);
	top_term.screen = true;
}

/* Gives the terminal back: main screen, cursor, line discipline, and
 * stderr. Runs once, at the end or at exit. */
static void top_restore(void)
{
	top_term_leave();
	if (top_term.saved_stderr >= 0) {
		dup2(top_term.saved_stderr, STDERR_FILENO);
		close(top_term.saved_stderr);
		top_term.saved_stderr = -1;
	}
	if (top_term.note) {
		fclose(top_term.note);
		top_term.note = NULL;
	}
}

static void top_setup(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = top_signal_cb;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a signal ends the wait for the next refresh. */
	static const int sigs[] = {SIGINT,  SIGTERM, SIGHUP,  SIGQUIT,
				   SIGTSTP, SIGCONT, SIGWINCH};
	for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++)
		sigaction(sigs[i], &sa, NULL);
	atexit(top_restore);
	top_term_enter();
	/* The client reports on stderr; on the alternate screen that would
	 * scribble over the view, so it is kept and shown in a line. */
	top_term.note = tmpfile();
	if (top_term.note) {
		top_term.saved_stderr = dup(STDERR_FILENO);
		dup2(fileno(top_term.note), STDERR_FILENO);
	}
}

static void top_size(int *cols, int *rows)
{
	struct winsize ws;
	*cols = 80;
	*rows = 24;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/* The last line the client printed since top_note_clear, without its
 * "mcpvisor: " prefix, escaped. */
static void top_note_read(char *out, size_t size)
{
	out[0] = '\0';
	if (top_term.note == NULL)
		return;
	char text[4096];
	ssize_t n = pread(fileno(top_term.note), text, sizeof text - 1, 0);
	if (n <= 0)
		return;
	text[n] = '\0';
	while (n > 0 && text[n - 1] == '\n')
		text[--n] = '\0';
	const char *last = strrchr(text, '\n');
	last = last ? last + 1 : text;
	if (strncmp(last, "mcpvisor: ", 10) == 0)
		last += 10;
	/* It may quote what a server said: shown, not sent. */
	escape_into(out, size, last, strlen(last), 0);
}

static void top_note_clear(void)
{
	if (top_term.note == NULL)
		return;
	/* stderr shares the file's offset: back to the start, or the next
	 * message would land past a hole. */
	fflush(stderr);
	if (ftruncate(fileno(top_term.note), 0) == 0)
		lseek(fileno(top_term.note), 0, SEEK_SET);
}

/* ---- the view ---- */

struct top_state {
	const char *home;
	struct client *client; /* NULL: to open again at the next refresh */
	json_t *figures;       /* the last answer, NULL when there is none */
	char note[TOP_NOTE_MAX];
	long pid; /* of the runtime last seen */
};

/* One refresh: the figures, or why there are none. A runtime that went
 * away is looked for again at every refresh (it may be restarted). */
static void top_fetch(struct top_state *st)
{
	top_note_clear();
	json_decref(st->figures);
	st->figures = NULL;
	if (st->client == NULL && client_open(st->home, &st->client) != CLI_OK)
		st->client = NULL;
	if (st->client) {
		st->pid = client_pid(st->client);
		if (client_get_json(st->client, TOP_PATH, &st->figures) !=
		    CLI_OK) {
			client_close(st->client);
			st->client = NULL;
		}
	}
	fflush(stderr);
	top_note_read(st->note, sizeof st->note);
}

static void top_draw(const struct top_state *st)
{
	int cols, rows;
	top_size(&cols, &rows);
	struct buf view, screen;
	buf_init(&view);
	buf_init(&screen);
	char head[256];
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	snprintf(head, sizeof head,
		 "mcpvisor top  %02d:%02d:%02d  every 1 s, latency over the "
		 "last minute  (q quits)",
		 tm.tm_hour, tm.tm_min, tm.tm_sec);
	top_view_line(&view, head, cols);
	if (st->figures) {
		top_view_render(st->figures, cols, rows > 2 ? rows - 2 : 0,
				&view);
	} else {
		char line[TOP_NOTE_MAX + 128];
		snprintf(line, sizeof line, "runtime not reachable: %s",
			 st->note[0] ? st->note : "no answer");
		top_view_line(&view, line, cols);
		top_view_line(&view,
			      "looking for it again every second (q quits)",
			      cols);
	}
	/* Home, each line over the old one, the rest of the screen
	 * cleared: no flicker, no scrolling. */
	buf_puts(&screen, "\x1b[H");
	const char *p = view.data;
	int n = 0;
	while (p && *p && n < rows) {
		size_t len = strcspn(p, "\n");
		buf_append(&screen, p, len);
		buf_puts(&screen, "\x1b[K");
		p += len + (p[len] == '\n');
		if (++n < rows)
			buf_puts(&screen, "\r\n");
	}
	buf_puts(&screen, "\x1b[J");
	top_write(screen.data, screen.len);
	buf_free(&view);
	buf_free(&screen);
}

/* ^Z: the terminal given back, then stopped as by default; continued,
 * the terminal taken again and the view drawn. */
static void top_job_control(const struct top_state *st)
{
	if (top_stop) {
		top_stop = 0;
		top_term_leave();
		struct sigaction dfl, ours;
		memset(&dfl, 0, sizeof dfl);
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		sigaction(SIGTSTP, &dfl, &ours);
		raise(SIGTSTP); /* returns once continued */
		sigaction(SIGTSTP, &ours, NULL);
		top_cont = 1;
	}
	if (top_cont) {
		top_cont = 0;
		top_term_enter();
		top_draw(st);
	}
}

/* Waits up to ms for a key; true when it was q (or Q). */
static bool top_wait(int ms)
{
	struct pollfd pfd = {.fd = STDIN_FILENO, .events = POLLIN};
	int n = poll(&pfd, top_term.raw ? 1 : 0, ms);
	if (n <= 0 || !(pfd.revents & (POLLIN | POLLHUP | POLLERR)))
		return false;
	char keys[64];
	ssize_t got = read(STDIN_FILENO, keys, sizeof keys);
	if (got <= 0 && (pfd.revents & (POLLHUP | POLLERR)))
		return true; /* the terminal went away */
	for (ssize_t i = 0; i < got; i++)
		if (keys[i] == 'q' || keys[i] == 'Q')
			return true;
	return false;
}

static int top_live(const char *home)
{
	struct top_state st = {.home = home};
	top_setup();
	while (!top_quit) {
		top_fetch(&st);
		uint64_t due = clock_now_ms() + TOP_REFRESH_MS;
		top_draw(&st);
		bool quit = false;
		while (!top_quit && !quit) {
			top_job_control(&st);
			uint64_t now = clock_now_ms();
			if (now >= due)
				break;
			quit = top_wait((int)(due - now));
			if (top_resized) {
				top_resized = 0;
				top_draw(&st);
			}
		}
		if (quit)
			break;
	}
	top_restore();
	json_decref(st.figures);
	client_close(st.client);
	return CLI_OK;
}

/* ---- once ---- */

static int top_once(const char *home, bool as_json)
{
	struct client *c;
	int rc = client_open(home, &c);
	if (rc != CLI_OK)
		return rc;
	json_t *fig = NULL;
	rc = client_get_json(c, TOP_PATH, &fig);
	if (rc == CLI_OK && as_json) {
		char *s = json_dumps(fig, JSON_INDENT(2));
		printf("%s\n", s);
		free(s);
	} else if (rc == CLI_OK) {
		struct buf b;
		buf_init(&b);
		top_view_render(fig, 0, 0, &b);
		fputs(b.data ? b.data : "", stdout);
		buf_free(&b);
	}
	json_decref(fig);
	client_close(c);
	return rc;
}

int cmd_top(int argc, char **argv)
{
	static const struct cli_spec spec = {"top", top_usage, CLI_OPT_JSON, 0,
					     0};
	struct cli_common o = {0};
	int rc = cli_parse_common(argc, argv, &spec, &o);
	if (rc >= 0)
		return rc;
	if (o.json || !isatty(STDOUT_FILENO))
		return top_once(o.home, o.json);
	/* A view that waits 10 s on a frozen runtime is no view: answers
	 * are awaited TOP_TIMEOUT, unless the user set their own. */
	setenv("MCPVISOR_TIMEOUT", TOP_TIMEOUT, 0);
	return top_live(o.home);
}
