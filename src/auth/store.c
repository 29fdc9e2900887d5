/*
 * The token store's files: a server's tokens, its lock and last challenge,
 * and the client registrations per authorization server, all JSON in
 * private folders, written by atomic rename, read without following
 * symlinks.
 */
#include "auth/store.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "auth/meta.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

static int64_t (*store_now_fn)(void);

int64_t store_now(void)
{
	return store_now_fn ? store_now_fn() : (int64_t)time(NULL);
}

void store_set_now(int64_t (*now)(void))
{
	store_now_fn = now;
}

void store_key(const char *name, const char *url, char out[STORE_KEY_HEX + 1])
{
	struct sha256_ctx *c = sha256_new();
	char hex[SHA256_HEX_BYTES];
	sha256_update(c, name, strlen(name) + 1); /* with its NUL */
	sha256_update(c, url, strlen(url));
	sha256_final_hex(c, hex);
	sha256_free(c);
	memcpy(out, hex, STORE_KEY_HEX);
	out[STORE_KEY_HEX] = '\0';
}

int store_dirs(const char *state_dir, bool create)
{
	static const char *const sub[] = {"auth", "auth/tokens",
					  "auth/clients"};
	for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
		char *p = xasprintf("%s/%s", state_dir, sub[i]);
		int rc = fsutil_private_dir(p, create, NULL);
		free(p);
		if (rc < 0)
			return rc;
	}
	return 0;
}

char *store_path(const char *state_dir, const char *key, const char *ext)
{
	return xasprintf("%s/auth/tokens/%s%s", state_dir, key, ext);
}

char *store_changed_path(const char *state_dir)
{
	return xasprintf("%s/auth/tokens/changed", state_dir);
}

/* Reads a JSON object file of ours. */
static int store_load_json(const char *path, json_t **out)
{
	char *text = NULL;
	size_t len = 0;
	int rc = fsutil_read_file(path, STORE_MAX_FILE, &text, &len);
	if (rc < 0)
		return rc;
	json_t *o = json_loadb(text, len, 0, NULL);
	explicit_bzero(text, len);
	free(text);
	if (!json_is_object(o)) {
		json_decref(o);
		return -EINVAL;
	}
	*out = o;
	return 0;
}

/* Writes o to path, 0600, atomically; the text is wiped after. */
static int store_save_json(const char *path, json_t *o)
{
	char *s = json_dumps(o, JSON_INDENT(2) | JSON_SORT_KEYS);
	if (s == NULL)
		return -ENOMEM;
	size_t n = strlen(s);
	int rc = fsutil_write_atomic(path, s, n, 0600);
	explicit_bzero(s, n);
	free(s);
	return rc;
}

static char *store_str(json_t *o, const char *field)
{
	const char *v = json_string_value(json_object_get(o, field));
	return v ? xstrdup(v) : NULL;
}

static void store_set_str(json_t *o, const char *field, const char *v)
{
	if (v)
		json_object_set_new(o, field, json_string(v));
}

static void store_touch_changed(const char *state_dir)
{
	char *p = store_changed_path(state_dir);
	char stamp[64];
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	int n = snprintf(stamp, sizeof stamp, "%lld.%09ld %ld\n",
			 (long long)ts.tv_sec, ts.tv_nsec, (long)getpid());
	fsutil_write_atomic(p, stamp, (size_t)n, 0600);
	free(p);
}

void store_tokens_clear(struct store_tokens *s)
{
	auth_tokens_clear(&s->t);
	free(s->requested_scope);
	s->requested_scope = NULL;
}

int store_read(const char *state_dir, const char *key, struct store_tokens *s)
{
	memset(s, 0, sizeof *s);
	char *path = store_path(state_dir, key, ".json");
	json_t *o = NULL;
	int rc = store_load_json(path, &o);
	free(path);
	if (rc < 0)
		return rc;
	struct auth_tokens *t = &s->t;
	t->access_token = store_str(o, "accessToken");
	t->refresh_token = store_str(o, "refreshToken");
	t->token_type = store_str(o, "tokenType");
	t->scope = store_str(o, "scope");
	t->issuer = store_str(o, "issuer");
	t->resource = store_str(o, "resource");
	t->token_endpoint = store_str(o, "tokenEndpoint");
	t->client_id = store_str(o, "clientId");
	t->expires_at = json_integer_value(json_object_get(o, "expiresAt"));
	t->generation =
		(uint64_t)json_integer_value(json_object_get(o, "generation"));
	s->requested_scope = store_str(o, "requestedScope");
	json_decref(o);
	if (t->access_token == NULL || t->token_type == NULL) {
		store_tokens_clear(s);
		return -EINVAL;
	}
	return 0;
}

int store_write(const char *state_dir, const char *name, const char *url,
		const struct store_tokens *s)
{
	char key[STORE_KEY_HEX + 1];
	int rc = store_dirs(state_dir, true);
	if (rc < 0)
		return rc;
	store_key(name, url, key);
	const struct auth_tokens *t = &s->t;
	json_t *o = json_pack("{s:i,s:s,s:s,s:I,s:I,s:I}", "version", 1,
			      "server", name, "url", url, "expiresAt",
			      (json_int_t)t->expires_at, "generation",
			      (json_int_t)t->generation, "obtainedAt",
			      (json_int_t)store_now());
	store_set_str(o, "accessToken", t->access_token);
	store_set_str(o, "refreshToken", t->refresh_token);
	store_set_str(o, "tokenType", t->token_type);
	store_set_str(o, "scope", t->scope);
	store_set_str(o, "issuer", t->issuer);
	store_set_str(o, "resource", t->resource);
	store_set_str(o, "tokenEndpoint", t->token_endpoint);
	store_set_str(o, "clientId", t->client_id);
	store_set_str(o, "requestedScope", s->requested_scope);
	char *path = store_path(state_dir, key, ".json");
	rc = store_save_json(path, o);
	/* jansson keeps its own copies of the strings. */
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		if (json_is_string(v))
			explicit_bzero((char *)json_string_value(v),
				       json_string_length(v));
	}
	json_decref(o);
	free(path);
	if (rc == 0)
		store_touch_changed(state_dir);
	return rc;
}

int store_remove(const char *state_dir, const char *key)
{
	char *path = store_path(state_dir, key, ".json");
	int rc = unlink(path) == 0 ? 0 : -errno;
	free(path);
	store_challenge_remove(state_dir, key);
	if (rc == 0)
		store_touch_changed(state_dir);
	return rc;
}

int store_lock(const char *state_dir, const char *key, bool wait, int *fd)
{
	int rc = store_dirs(state_dir, true);
	if (rc < 0)
		return rc;
	char *path = store_path(state_dir, key, ".lock");
	int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	free(path);
	if (f < 0)
		return -errno;
	while (flock(f, LOCK_EX | (wait ? 0 : LOCK_NB)) < 0) {
		if (errno == EINTR)
			continue;
		rc = errno == EWOULDBLOCK ? -EWOULDBLOCK : -errno;
		close(f);
		return rc;
	}
	*fd = f;
	return 0;
}

void store_unlock(int fd)
{
	if (fd < 0)
		return;
	/* A modification the waiters' watch sees; what it says is only for
	 * a person reading the file. */
	char line[32];
	int n = snprintf(line, sizeof line, "%ld\n", (long)getpid());
	if (pwrite(fd, line, (size_t)n, 0) < 0) {
		/* The waiters' fallback timer covers it. */
	}
	close(fd);
}

void store_challenge_clear(struct store_challenge *c)
{
	free(c->scope);
	free(c->resource_metadata);
	free(c->error);
	memset(c, 0, sizeof *c);
}

int store_challenge_read(const char *state_dir, const char *key,
			 struct store_challenge *c)
{
	memset(c, 0, sizeof *c);
	char *path = store_path(state_dir, key, ".challenge");
	json_t *o = NULL;
	int rc = store_load_json(path, &o);
	free(path);
	if (rc < 0)
		return rc;
	c->status = (int)json_integer_value(json_object_get(o, "status"));
	c->scope = store_str(o, "scope");
	c->resource_metadata = store_str(o, "resourceMetadata");
	c->error = store_str(o, "error");
	c->at = json_integer_value(json_object_get(o, "at"));
	c->repeats = (int)json_integer_value(json_object_get(o, "repeats"));
	c->refused = json_is_true(json_object_get(o, "refused"));
	json_decref(o);
	return 0;
}

int store_challenge_write(const char *state_dir, const char *key,
			  const struct store_challenge *c)
{
	int rc = store_dirs(state_dir, true);
	if (rc < 0)
		return rc;
	json_t *o = json_pack("{s:i,s:I,s:i,s:b}", "status", c->status, "at",
			      (json_int_t)c->at, "repeats", c->repeats,
			      "refused", c->refused);
	store_set_str(o, "scope", c->scope);
	store_set_str(o, "resourceMetadata", c->resource_metadata);
	store_set_str(o, "error", c->error);
	char *path = store_path(state_dir, key, ".challenge");
	rc = store_save_json(path, o);
	json_decref(o);
	free(path);
	return rc;
}

void store_challenge_remove(const char *state_dir, const char *key)
{
	char *path = store_path(state_dir, key, ".challenge");
	unlink(path);
	free(path);
}

/* The issuer's shared registration (client_id NULL), else the file of
 * one client at the issuer: hex of SHA-256(issuer [NUL client_id]). */
static char *store_client_path(const char *state_dir, const char *issuer,
			       const char *client_id)
{
	char hex[SHA256_HEX_BYTES];
	size_t il = strlen(issuer);
	size_t cl = client_id ? strlen(client_id) + 1 : 0;
	char *k = xmalloc(il + cl + 1);
	memcpy(k, issuer, il + 1);
	if (client_id)
		memcpy(k + il + 1, client_id, cl);
	sha256_hex(k, il + cl, hex);
	free(k);
	hex[STORE_KEY_HEX] = '\0';
	return xasprintf("%s/auth/clients/%s%s.json", state_dir,
			 client_id ? "c-" : "", hex);
}

void store_client_clear(struct store_client *c)
{
	free(c->issuer);
	free(c->source);
	free(c->client_id);
	meta_wipe(c->client_secret);
	free(c->auth_method);
	free(c->redirect_uri);
	memset(c, 0, sizeof *c);
}

static int store_client_load(char *path, const char *issuer,
			     struct store_client *c)
{
	memset(c, 0, sizeof *c);
	json_t *o = NULL;
	int rc = store_load_json(path, &o);
	free(path);
	if (rc < 0)
		return rc;
	c->issuer = store_str(o, "issuer");
	c->source = store_str(o, "source");
	c->client_id = store_str(o, "clientId");
	c->client_secret = store_str(o, "clientSecret");
	c->auth_method = store_str(o, "authMethod");
	c->redirect_uri = store_str(o, "redirectUri");
	c->secret_expires_at =
		json_integer_value(json_object_get(o, "secretExpiresAt"));
	json_decref(o);
	/* A file under another issuer's name (a hash collision, a copy) is
	 * not this issuer's registration. */
	if (c->issuer == NULL || strcmp(c->issuer, issuer) != 0 ||
	    c->client_id == NULL || c->source == NULL) {
		store_client_clear(c);
		return -EINVAL;
	}
	return 0;
}

int store_client_read(const char *state_dir, const char *issuer,
		      struct store_client *c)
{
	return store_client_load(store_client_path(state_dir, issuer, NULL),
				 issuer, c);
}

int store_client_find(const char *state_dir, const char *issuer,
		      const char *client_id, struct store_client *c)
{
	int rc = store_client_load(
		store_client_path(state_dir, issuer, client_id), issuer, c);
	if (rc == 0 && strcmp(c->client_id, client_id) == 0)
		return 0;
	if (rc == 0) {
		/* a hash collision: another client's file */
		store_client_clear(c);
		rc = -ENOENT;
	}
	return rc;
}

/* Writes c to path (0600, atomically). */
static int store_client_save(char *path, const struct store_client *c)
{
	json_t *o = json_pack("{s:i,s:s,s:s,s:s,s:I,s:I}", "version", 1,
			      "issuer", c->issuer, "source", c->source,
			      "clientId", c->client_id, "secretExpiresAt",
			      (json_int_t)c->secret_expires_at, "registeredAt",
			      (json_int_t)store_now());
	store_set_str(o, "clientSecret", c->client_secret);
	store_set_str(o, "authMethod", c->auth_method);
	store_set_str(o, "redirectUri", c->redirect_uri);
	int rc = store_save_json(path, o);
	json_t *sec = json_object_get(o, "clientSecret");
	if (sec)
		explicit_bzero((char *)json_string_value(sec),
			       json_string_length(sec));
	json_decref(o);
	free(path);
	return rc;
}

int store_client_write(const char *state_dir, const struct store_client *c)
{
	int rc = store_dirs(state_dir, true);
	if (rc < 0)
		return rc;
	rc = store_client_save(
		store_client_path(state_dir, c->issuer, c->client_id), c);
	/* Only a dynamic registration is the issuer's to share: a
	 * pre-registered or metadata document client belongs to its
	 * server's config, and written there it would replace the one the
	 * other servers at the issuer registered (and their secret). */
	if (rc == 0 && strcmp(c->source, "dcr") == 0)
		rc = store_client_save(
			store_client_path(state_dir, c->issuer, NULL), c);
	return rc;
}

int store_client_remove(const char *state_dir, const struct store_client *c)
{
	char *path = store_client_path(state_dir, c->issuer, c->client_id);
	int rc = unlink(path) == 0 ? 0 : -errno;
	free(path);
	struct store_client shared;
	if (store_client_read(state_dir, c->issuer, &shared) == 0) {
		if (strcmp(shared.client_id, c->client_id) == 0) {
			path = store_client_path(state_dir, c->issuer, NULL);
			rc = unlink(path) == 0 ? 0 : -errno;
			free(path);
		}
		store_client_clear(&shared);
	}
	return rc;
}

/* ---- auth.h's synchronous store functions ---- */

void auth_tokens_clear(struct auth_tokens *t)
{
	meta_wipe(t->access_token);
	meta_wipe(t->refresh_token);
	free(t->token_type);
	free(t->scope);
	free(t->issuer);
	free(t->resource);
	free(t->token_endpoint);
	free(t->client_id);
	memset(t, 0, sizeof *t);
}

int auth_store_load(const char *state_dir, const char *name, const char *url,
		    struct auth_tokens *out)
{
	char key[STORE_KEY_HEX + 1];
	struct store_tokens s;
	store_key(name, url, key);
	int rc = store_read(state_dir, key, &s);
	if (rc < 0) {
		memset(out, 0, sizeof *out);
		return rc;
	}
	free(s.requested_scope);
	*out = s.t;
	return 0;
}

int auth_store_save(const char *state_dir, const char *name, const char *url,
		    struct auth_tokens *t)
{
	char key[STORE_KEY_HEX + 1];
	struct store_tokens old, s = {0};
	int fd;
	store_key(name, url, key);
	int rc = store_lock(state_dir, key, true, &fd);
	if (rc < 0)
		return rc;
	t->generation = 1;
	if (store_read(state_dir, key, &old) == 0) {
		t->generation = old.t.generation + 1;
		store_tokens_clear(&old);
	}
	s.t = *t;
	rc = store_write(state_dir, name, url, &s);
	store_unlock(fd);
	return rc;
}

int auth_store_forget(const char *state_dir, const char *name, const char *url)
{
	char key[STORE_KEY_HEX + 1];
	int fd;
	store_key(name, url, key);
	int rc = store_dirs(state_dir, false);
	if (rc < 0)
		return rc == -ENOENT ? -ENOENT : rc;
	rc = store_lock(state_dir, key, true, &fd);
	if (rc < 0)
		return rc;
	rc = store_remove(state_dir, key);
	store_unlock(fd);
	return rc;
}

char *auth_store_path(const char *state_dir, const char *name, const char *url)
{
	char key[STORE_KEY_HEX + 1];
	store_key(name, url, key);
	return store_path(state_dir, key, ".json");
}
