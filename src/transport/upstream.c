/*
 * Which transport carries a server: chosen by its kind, and for url
 * servers by its type. The instance calls this once and never looks at
 * the kind again.
 */
#include "transport/upstream.h"

const struct upstream_ops *upstream_ops_for(const struct server_config *s)
{
	switch (s->kind) {
	case SERVER_STDIO:
		return &upstream_stdio;
	case SERVER_HTTP_REMOTE:
		return &upstream_http;
	case SERVER_HTTP_LOCAL:
		return &upstream_http_local;
	case SERVER_CONTAINER:
		return &upstream_container;
	case SERVER_CONTAINER_HTTP:
		return &upstream_container_http;
	}
	return NULL;
}
