/*
 * What `mcpvisor top` draws: the runtime's figures (the JSON of
 * /metrics?format=json) as a table of plain text lines that fit a
 * terminal, with no terminal handling of its own (cmd_top.c does that).
 */
#ifndef MCPV_CLI_TOP_VIEW_H
#define MCPV_CLI_TOP_VIEW_H

#include <jansson.h>

#include "util/buf.h"

/* Longest server name shown in full; longer ones end in "~". */
#define TOP_VIEW_NAME_MAX 24

/* Appends the table to out: a line about the runtime, one about a config
 * that did not reload (as status says it), the column heads, one line
 * per server. Each line ends in '\n' and holds at most cols
 * characters (0: no limit); at most rows lines (0: no limit), the last of
 * them saying how many servers did not fit. */
void top_view_render(const json_t *figures, int cols, int rows,
		     struct buf *out);
/* Appends line (up to its '\n' or end) cut to cols characters (UTF-8
 * sequences count once; 0: no limit), with a '\n'. */
void top_view_line(struct buf *out, const char *line, int cols);

#endif
