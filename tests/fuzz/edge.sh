#!/bin/sh
# Writes inputs at the parsers' size limits (too big to keep as files) into
# DIR/NAME/, one folder per harness; run.sh adds them to the seed corpora.
# The numbers are the limits in src/http/httpparse.h, src/config/config.h,
# src/config/filter.h, src/util/jsonscan.h, src/config/jsonc.h,
# src/auth/www_auth.h, src/auth/meta.h, src/auth/form.h and
# src/jsonrpc/envelope.h; each limit gets one input on it and one past it.
# Usage: tests/fuzz/edge.sh DIR
set -eu
out=${1:?usage: edge.sh DIR}
mkdir -p "$out/httpparse" "$out/config" "$out/jsonscan" "$out/framer"

# rep TEXT N: TEXT N times
rep() { awk -v s="$1" -v n="$2" 'BEGIN { for (i = 0; i < n; i++) printf "%s", s }'; }

# HTTP: "P?" = body limit 1000, 64-byte segments (see fuzz_httpparse.c).
h=$out/httpparse
for n in 8192 8193; do # HTTP_MAX_URL: the target's length
	{ printf 'P?GET /'; rep a $((n - 1)); printf ' HTTP/1.1\r\nHost: x\r\n\r\n'; } >"$h/url-$n"
done
for n in 32767 32768; do # HTTP_MAX_HEADER_BYTES: name "x" + value
	{ printf 'P?GET / HTTP/1.1\r\nx: '; rep b $((n - 1)); printf '\r\n\r\n'; } >"$h/hbytes-$n"
done
for n in 64 65; do # HTTP_MAX_HEADERS
	{ printf 'P?GET / HTTP/1.1\r\n'; rep 'h: v\r\n' $n; printf '\r\n'; } >"$h/headers-$n"
done
# A head padded with spaces before a value, which count toward no other
# limit: HTTP_MAX_HEAD, where the parser reads heads whole (URL + header
# bytes + 8 per header + 1024 = 42496), and either side of it.
for n in 42495 42496 42497; do
	{ printf 'P?GET / HTTP/1.1\r\nx:'; rep ' ' $((n - 23)); printf 'v\r\n\r\n'; } >"$h/head-$n"
done
for n in 1000 1001; do # the harness's body limit
	{ printf 'P?POST /mcp HTTP/1.1\r\nContent-Length: %d\r\n\r\n' $n; rep c $n; } >"$h/body-$n"
	{ printf 'P?POST /mcp HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n'
	  printf '%x\r\n' $((n - 1)); rep d $((n - 1)); printf '\r\n1\r\ne\r\n0\r\n\r\n'; } >"$h/chunked-$n"
done

# Config: CONFIG_MAX_STRING, _NAME, _ARGS, _ENV, _SERVERS.
c=$out/config
for n in 65536 65537; do
	{ printf '{"mcpServers":{"s":{"command":"'; rep e $n; printf '"}}}'; } >"$c/string-$n"
done
for n in 64 65; do
	{ printf '{"mcpServers":{"'; rep n $n; printf '":{"command":"x"}}}'; } >"$c/name-$n"
done
for n in 256 257; do
	{ printf '{"mcpServers":{"s":{"command":"x","args":["a"'; rep ',"a"' $((n - 1)); printf ']}}}'; } >"$c/args-$n"
	{ printf '{"mcpServers":{"s":{"command":"x","env":{'
	  awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%s\"E%d\":\"v\"", i ? "," : "", i }'
	  printf '}}}}'; } >"$c/env-$n"
	{ printf '{"mcpServers":{'
	  awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%s\"s%d\":{\"command\":\"x\"}", i ? "," : "", i }'
	  printf '}}'; } >"$c/servers-$n"
done

# Filters (src/config/filter.h): CONFIG_FILTER_MAX_PATTERNS, _PATTERN.
for n in 256 257; do
	{ printf '{"mcpServers":{"s":{"command":"x","tools":{"deny":["a*"'; rep ',"a*"' $((n - 1)); printf ']}}}}'; } >"$c/patterns-$n"
done
for n in 1024 1025; do
	{ printf '{"mcpServers":{"s":{"command":"x","resources":{"allow":["'; rep '*a' $((n / 2)); rep b $((n % 2)); printf '"]}}}}'; } >"$c/pattern-$n"
done

# jsonscan: JSONSCAN_MAX_DEPTH counts the top object as 1, a scalar too.
j=$out/jsonscan
for n in 64 65; do
	{ rep '{"a":' $((n - 1)); printf '1'; rep '}' $((n - 1)); } >"$j/depth-$n"
	{ printf '{"params":'; rep '[' $((n - 1)); rep ']' $((n - 1)); printf '}'; } >"$j/array-depth-$n"
done

# jsonc: JSONC_MAX_DEPTH (src/config/jsonc.h), the root object is 1.
mkdir -p "$out/jsonc"
for n in 256 257; do
	{ rep '{"a":' $((n - 1)); printf '{}'; rep '}' $((n - 1)); } >"$out/jsonc/depth-$n"
	{ printf '{"servers":'; rep '[' $((n - 1)); rep ']' $((n - 1)); printf '}'; } >"$out/jsonc/array-depth-$n"
done

# framer: long mode (byte 0 = 0xc1) tiles a line past 64 KiB.
printf '\301\0ab{"jsonrpc":"2.0","id":1}' >"$out/framer/long-line"
printf '\301\377ab{"a":1}\n' >"$out/framer/long-lines"

# WWW-Authenticate (src/auth/www_auth.h): WWW_AUTH_MAX_LEN, _CHALLENGES,
# _PARAMS.
w=$out/wwwauth
mkdir -p "$w"
for n in 8192 8193; do
	{ printf 'Bearer scope="'; rep s $((n - 15)); printf '"'; } >"$w/len-$n"
done
for n in 8 9; do
	awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%sS%d x=\"y\"", i ? ", " : "", i }' >"$w/challenges-$n"
done
for n in 16 17; do
	{ printf 'Bearer '; awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%sp%d=v", i ? ", " : "", i }'; } >"$w/params-$n"
done

# OAuth JSON (src/auth/meta.h; the first byte picks the reader, "0" the
# resource metadata, "2" the token): META_MAX_DOC, _LIST, _URL, _TOKEN.
j=$out/oauthjson
mkdir -p "$j"
doc='{"resource":"https://x/mcp","authorization_servers":["https://as"]}'
for n in 65536 65537; do
	{ printf '0%s' "$doc"; rep ' ' $((n - ${#doc})); } >"$j/doc-$n"
done
for n in 64 65; do
	{ printf '0{"resource":"https://x","authorization_servers":["https://as"],"scopes_supported":["s"'; rep ',"s"' $((n - 1)); printf ']}'; } >"$j/list-$n"
done
for n in 2048 2049; do
	{ printf '0{"authorization_servers":["https://as"],"resource":"https://'; rep a $((n - 8)); printf '"}'; } >"$j/url-$n"
done
for n in 16384 16385; do
	{ printf '2{"token_type":"Bearer","access_token":"'; rep t $n; printf '"}'; } >"$j/token-$n"
done

# The redirect's query (src/auth/form.h): FORM_MAX_QUERY, _PARAMS.
r=$out/redirect
mkdir -p "$r"
for n in 8192 8193; do
	{ printf 'code='; rep c $((n - 5)); } >"$r/query-$n"
done
for n in 32 33; do
	awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%sp%d=v", i ? "&" : "", i }' >"$r/params-$n"
done

# envelope (src/jsonrpc/envelope.h): ENVELOPE_MAX_HEADER on a Mcp-Name and
# a Mcp-Param, ENVELOPE_MAX_SCHEMA_DEPTH (the root is 0) and
# ENVELOPE_MAX_PARAMS in the body's "schema".
e=$out/envelope
mkdir -p "$e"
for n in 8192 8193; do
	{ printf 'mcp-protocol-version:2026-07-28\nmcp-method:tools/call\nmcp-name:'; rep t $n
	  printf '\nmcp-param-s:'; rep s $n
	  printf '\n\n{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"'; rep t $n
	  printf '","arguments":{"s":"'; rep s $n
	  printf '"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'; } >"$e/header-$n"
done
for n in 64 65; do
	{ printf '\n{"schema":'; rep '{"items":' $n; printf '{}'; rep '}' $n; printf '}'; } >"$e/depth-$n"
	{ printf '\n{"schema":{"properties":{'
	  awk -v n=$n 'BEGIN { for (i = 0; i < n; i++) printf "%s\"p%d\":{\"type\":\"string\",\"x-mcp-header\":\"P%d\"}", i ? "," : "", i, i }'
	  printf '}},"params":{"arguments":{"p0":"v"}}}'; } >"$e/params-$n"
done
