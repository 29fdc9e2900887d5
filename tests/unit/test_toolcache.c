/*
 * Unit tests for the tool cache: round trips, file modes, stable salted
 * names, the salt file, rejection of corrupt or foreign files, and that no
 * config secret reaches a cache file or its name. Each test owns a mkdtemp
 * folder that the suite's fini removes.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "config/config.h"
#include "toolcache/toolcache.h"
#include "util/fsutil.h"
#include "util/sha256.h"
#include "util/xmalloc.h"

#define TCT_ENV_SECRET "sk-live-ENVSECRET-7f3a"
#define TCT_HDR_SECRET "HDRSECRET-91c2"
/* Put into corrupt files to prove warnings never quote a file. */
#define TCT_MARKER "MARKER-zz9"

static char tct_root[PATH_MAX];
static char *tct_cache; /* tct_root/cache */
static struct toolcache *tct_tc;

static void tct_init(void)
{
	strcpy(tct_root, "/tmp/mcpv-toolcache-XXXXXX");
	cr_assert_not_null(mkdtemp(tct_root), "mkdtemp: %s", strerror(errno));
	tct_cache = xasprintf("%s/cache", tct_root);
	cr_assert_eq(toolcache_open(tct_cache, &tct_tc), 0);
	cr_assert_not_null(tct_tc);
}

static int tct_rm_cb(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	remove(path);
	return 0;
}

static void tct_fini(void)
{
	toolcache_free(tct_tc);
	tct_tc = NULL;
	free(tct_cache);
	tct_cache = NULL;
	if (tct_root[0] != '\0')
		nftw(tct_root, tct_rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

TestSuite(toolcache, .init = tct_init, .fini = tct_fini, .timeout = 30);

/* A valid name derived from a seed, as the runtime would get one. */
static char *tct_name(const char *seed)
{
	char *hex = xmalloc(SHA256_HEX_BYTES);
	sha256_hex(seed, strlen(seed), hex);
	return hex;
}

static char *tct_path(const char *name)
{
	return xasprintf("%s/tools/%s.json", tct_cache, name);
}

static json_t *tct_lists(void)
{
	json_error_t err;
	json_t *l = json_loads(
		"{\"tools\": [{\"name\": \"echo\", \"description\": \"Echo\","
		" \"inputSchema\": {\"type\": \"object\", \"properties\": "
		"{\"text\": {\"type\": \"string\"}}}},"
		" {\"name\": \"add\", \"inputSchema\": {\"type\": "
		"\"object\"}}],"
		" \"prompts\": [{\"name\": \"greet\"}],"
		" \"resources\": [{\"uri\": \"test://static\", \"name\": "
		"\"s\"}],"
		" \"resourceTemplates\": []}",
		0, &err);
	cr_assert_not_null(l, "fixture: %s", err.text);
	return l;
}

/* The whole file, or NULL when it cannot be read. */
static char *tct_slurp(const char *path, size_t *len)
{
	char *data = NULL;
	if (fsutil_read_file(path, 2 * TOOLCACHE_MAX_BYTES, &data, len) < 0)
		return NULL;
	return data;
}

static void tct_spit(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(fd, 0, "open %s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

/* Names in a folder, "." and ".." left out, joined by '\n'. */
static char *tct_list_dir(const char *dir, int *count)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "opendir %s: %s", dir, strerror(errno));
	char *names = xstrdup("");
	*count = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *n = xasprintf("%s%s\n", names, e->d_name);
		free(names);
		names = n;
		(*count)++;
	}
	closedir(d);
	return names;
}

static mode_t tct_mode(const char *path)
{
	struct stat st;
	cr_assert_eq(stat(path, &st), 0, "stat %s: %s", path, strerror(errno));
	return st.st_mode & 07777;
}

static bool tct_is_name(const char *s)
{
	if (s == NULL || strlen(s) != 64)
		return false;
	return strspn(s, "0123456789abcdef") == 64;
}

/* Runs toolcache_load with stderr sent to a file; returns what was logged
 * (caller frees) and the result through *out. */
static char *tct_load_logged(const char *name, json_t **out)
{
	char *logpath = xasprintf("%s/stderr.log", tct_root);
	fflush(stderr);
	int saved = dup(STDERR_FILENO);
	int fd = open(logpath, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	cr_assert_geq(saved, 0);
	cr_assert_geq(fd, 0);
	dup2(fd, STDERR_FILENO);
	*out = toolcache_load(tct_tc, name);
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	close(fd);
	size_t len;
	char *text = tct_slurp(logpath, &len);
	cr_assert_not_null(text);
	unlink(logpath);
	free(logpath);
	return text;
}

/* The load must fail with one warning that names the file and quotes
 * nothing from it. */
static void tct_assert_rejected(const char *name, const char *what)
{
	json_t *got = NULL;
	char *log = tct_load_logged(name, &got);
	cr_assert_null(got, "%s: a bad file was trusted", what);
	char *fname = xasprintf("%s.json", name);
	cr_assert_not_null(strstr(log, "warn"), "%s: no warning in [%s]", what,
			   log);
	cr_assert_not_null(strstr(log, fname), "%s: warning [%s] lacks %s",
			   what, log, fname);
	cr_assert_null(strstr(log, TCT_MARKER),
		       "%s: warning [%s] quotes the file", what, log);
	free(fname);
	free(log);
}

Test(toolcache, round_trip)
{
	char *name = tct_name("round trip");
	json_t *lists = tct_lists();
	time_t before = time(NULL);
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	time_t after = time(NULL);

	json_t *got = toolcache_load(tct_tc, name);
	cr_assert_not_null(got);
	cr_assert(json_equal(got, lists), "loaded lists differ");
	json_t *again = toolcache_load(tct_tc, name);
	cr_assert(json_equal(again, lists));
	cr_assert_neq(again, got, "each load is a fresh document");
	json_decref(again);
	json_decref(got);

	/* The file is the documented format, sorted and compact. */
	char *path = tct_path(name);
	size_t len;
	char *text = tct_slurp(path, &len);
	cr_assert_not_null(text);
	char *prefix = xasprintf("{\"format\":1,\"lists\":{\"prompts\":");
	cr_assert_eq(strncmp(text, prefix, strlen(prefix)), 0, "file: %s",
		     text);
	json_t *doc = json_loads(text, 0, NULL);
	cr_assert_not_null(doc);
	cr_assert_eq(json_integer_value(json_object_get(doc, "format")),
		     TOOLCACHE_FORMAT);
	cr_assert_str_eq(json_string_value(json_object_get(doc, "name")), name);
	json_int_t w = json_integer_value(json_object_get(doc, "written"));
	cr_assert(w >= before && w <= after, "written %lld not in [%lld, %lld]",
		  (long long)w, (long long)before, (long long)after);
	cr_assert(json_equal(json_object_get(doc, "lists"), lists));
	cr_assert_eq(json_object_size(doc), 4);

	/* Another name is simply absent, and says nothing. */
	char *other = tct_name("never stored");
	json_t *none = NULL;
	char *log = tct_load_logged(other, &none);
	cr_assert_null(none);
	cr_assert_str_empty(log, "absent file logged [%s]", log);

	/* Storing again replaces the lists. */
	json_t *fewer = json_pack("{s:[{s:s}]}", "tools", "name", "only");
	cr_assert_eq(toolcache_store(tct_tc, name, fewer), 0);
	got = toolcache_load(tct_tc, name);
	cr_assert(json_equal(got, fewer));

	json_decref(got);
	json_decref(fewer);
	free(log);
	free(other);
	json_decref(doc);
	free(prefix);
	free(text);
	free(path);
	json_decref(lists);
	free(name);
}

Test(toolcache, modes_are_private_whatever_the_umask)
{
	mode_t old = umask(0);
	char *dir = xasprintf("%s/loose", tct_root);
	struct toolcache *tc = NULL;
	cr_assert_eq(toolcache_open(dir, &tc), 0);
	char *tools = xasprintf("%s/tools", dir);
	char *salt = xasprintf("%s/salt", dir);
	cr_assert_eq(tct_mode(tools), 0700, "tools is %o", tct_mode(tools));
	cr_assert_eq(tct_mode(salt), 0600, "salt is %o", tct_mode(salt));

	char *name = tct_name("modes");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tc, name, lists), 0);
	char *file = xasprintf("%s/%s.json", tools, name);
	cr_assert_eq(tct_mode(file), 0600, "file is %o", tct_mode(file));
	toolcache_free(tc);

	/* Loosened by hand: the next open makes them private again. */
	cr_assert_eq(chmod(tools, 0755), 0);
	cr_assert_eq(chmod(salt, 0644), 0);
	cr_assert_eq(toolcache_open(dir, &tc), 0);
	cr_assert_eq(tct_mode(tools), 0700, "tools is %o", tct_mode(tools));
	cr_assert_eq(tct_mode(salt), 0600, "salt is %o", tct_mode(salt));
	umask(old);

	toolcache_free(tc);
	json_decref(lists);
	free(file);
	free(name);
	free(salt);
	free(tools);
	free(dir);
}

Test(toolcache, name_is_canonical_and_stable)
{
	json_t *a = json_pack("{s:i, s:[b,n,s], s:{s:s, s:i}}", "a", 1, "b", 1,
			      "x", "c", "d", "e", "f", 2);
	json_t *b = json_object();
	json_t *c = json_object();
	json_object_set_new(c, "f", json_integer(2));
	json_object_set_new(c, "d", json_string("e"));
	json_object_set_new(b, "c", c);
	json_object_set_new(b, "b", json_pack("[b,n,s]", 1, "x"));
	json_object_set_new(b, "a", json_integer(1));

	char *na = toolcache_name(a);
	char *nb = toolcache_name(b);
	cr_assert(tct_is_name(na), "not 64 lowercase hex: %s", na);
	cr_assert_str_eq(na, nb, "key order changed the name");
	/* sha256 of {"a":1,"b":[true,null,"x"],"c":{"d":"e","f":2}} */
	cr_assert_str_eq(
		na, "42d16c2d872f4766b56a60489f70ac91d7f3f0f81ff30a636dde24ff"
		    "4c281381");
	cr_assert_null(toolcache_name(NULL));

	free(nb);
	free(na);
	json_decref(b);
	json_decref(a);
}

Test(toolcache, name_changes_with_any_value)
{
	const char *text =
		"{\"mcpServers\": {\"s\": {\"command\": \"/bin/echo\", "
		"\"args\": [\"one\"], \"env\": {\"K\": \"v1\", \"L\": \"v2\"},"
		" \"cwd\": \"/tmp\", \"toolTimeout\": \"5s\"}}}";
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	cr_assert_eq(cfg->nservers, 1);
	cr_assert_null(cfg->servers[0].error, "%s", cfg->servers[0].error);
	json_t *ident = config_server_identity(&cfg->servers[0], true,
					       toolcache_salt(tct_tc));
	char *base = toolcache_name(ident);
	cr_assert(tct_is_name(base));

	/* Every field of the identity, changed alone, moves the name. */
	const char *key;
	json_t *v;
	int n = 0;
	json_object_foreach(ident, key, v)
	{
		json_t *copy = json_deep_copy(ident);
		json_object_set_new(copy, key, json_string("changed"));
		char *changed = toolcache_name(copy);
		cr_assert_str_neq(changed, base, "changing %s kept the name",
				  key);
		free(changed);
		json_decref(copy);
		n++;
	}
	cr_assert_geq(n, 8, "identity has only %d fields", n);

	/* So does one env fingerprint inside it. */
	json_t *copy = json_deep_copy(ident);
	json_object_set_new(json_object_get(copy, "env"), "L",
			    json_string("fp:0"));
	char *changed = toolcache_name(copy);
	cr_assert_str_neq(changed, base);
	free(changed);
	json_decref(copy);

	/* And the same identity built again gives the same name. */
	json_t *twice = config_server_identity(&cfg->servers[0], true,
					       toolcache_salt(tct_tc));
	char *same = toolcache_name(twice);
	cr_assert_str_eq(same, base);

	free(same);
	json_decref(twice);
	free(base);
	json_decref(ident);
	config_free(cfg);
}

Test(toolcache, another_salt_gives_another_name)
{
	const char *text =
		"{\"mcpServers\": {\"s\": {\"command\": \"/bin/echo\", "
		"\"env\": {\"API_KEY\": \"" TCT_ENV_SECRET "\"}}}}";
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	char *da = xasprintf("%s/a", tct_root);
	char *db = xasprintf("%s/b", tct_root);
	struct toolcache *ta = NULL, *tb = NULL;
	cr_assert_eq(toolcache_open(da, &ta), 0);
	cr_assert_eq(toolcache_open(db, &tb), 0);
	cr_assert_str_neq(toolcache_salt(ta), toolcache_salt(tb));

	json_t *ia = config_server_identity(&cfg->servers[0], true,
					    toolcache_salt(ta));
	json_t *ib = config_server_identity(&cfg->servers[0], true,
					    toolcache_salt(tb));
	char *na = toolcache_name(ia);
	char *nb = toolcache_name(ib);
	cr_assert_str_neq(na, nb);

	/* A file from one cache means nothing to the other. */
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(ta, na, lists), 0);
	json_t *got = toolcache_load(tb, nb);
	cr_assert_null(got);
	got = toolcache_load(ta, na);
	cr_assert(json_equal(got, lists));

	json_decref(got);
	json_decref(lists);
	free(nb);
	free(na);
	json_decref(ib);
	json_decref(ia);
	toolcache_free(tb);
	toolcache_free(ta);
	free(db);
	free(da);
	config_free(cfg);
}

Test(toolcache, salt_is_made_once_and_reused)
{
	char *path = xasprintf("%s/salt", tct_cache);
	size_t len;
	char *text = tct_slurp(path, &len);
	cr_assert_not_null(text, "no salt file after open");
	cr_assert_eq(len, 64);
	cr_assert(tct_is_name(text), "salt [%s] is not 64 hex", text);
	cr_assert_str_eq(text, toolcache_salt(tct_tc));
	struct stat st1, st2;
	cr_assert_eq(stat(path, &st1), 0);

	/* A restart reads the same salt, rewrites nothing, and finds what
	 * the previous run stored. */
	char *name = tct_name("reuse");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	struct toolcache *tc2 = NULL;
	cr_assert_eq(toolcache_open(tct_cache, &tc2), 0);
	cr_assert_str_eq(toolcache_salt(tc2), toolcache_salt(tct_tc));
	cr_assert_eq(stat(path, &st2), 0);
	cr_assert_eq(st1.st_ino, st2.st_ino, "salt file was replaced");
	json_t *got = toolcache_load(tc2, name);
	cr_assert(json_equal(got, lists));

	json_decref(got);
	toolcache_free(tc2);
	json_decref(lists);
	free(name);
	free(text);
	free(path);
}

Test(toolcache, corrupt_salt_is_replaced)
{
	static const char *bad[] = {
		"",
		"abc",
		"gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg"
		"gg",
		"00000000000000000000000000000000000000000000000000000000000000"
		"000",
		"00000000000000000000000000000000000000000000000000000000000000"
		"00"
		"\n",
		"00000000000000000000000000000000-"
		"0000000000000000000000000000000",
	};
	char *path = xasprintf("%s/salt", tct_cache);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		tct_spit(path, bad[i], strlen(bad[i]));
		struct toolcache *tc = NULL;
		cr_assert_eq(toolcache_open(tct_cache, &tc), 0);
		const char *salt = toolcache_salt(tc);
		cr_assert(tct_is_name(salt), "case %zu: salt [%s]", i, salt);
		cr_assert_str_neq(salt, bad[i]);
		size_t len;
		char *text = tct_slurp(path, &len);
		cr_assert_not_null(text);
		cr_assert_str_eq(text, salt, "case %zu: file not rewritten", i);
		cr_assert_eq(tct_mode(path), 0600);
		free(text);
		toolcache_free(tc);
	}
	/* A salt written in upper case is still a salt: kept as is. */
	const char *upper = "ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789AB"
			    "CDEF0123456789";
	tct_spit(path, upper, strlen(upper));
	struct toolcache *tc = NULL;
	cr_assert_eq(toolcache_open(tct_cache, &tc), 0);
	cr_assert_str_eq(toolcache_salt(tc), upper);
	toolcache_free(tc);
	free(path);
}

Test(toolcache, corrupt_files_are_ignored)
{
	static const char *cases[][2] = {
		{"garbage", "\x01\x02" TCT_MARKER "\xff\xfe"},
		{"empty", ""},
		{"not an object", "[\"" TCT_MARKER "\"]"},
		{"wrong format",
		 "{\"format\":2,\"lists\":{\"tools\":[{\"name\":\"" TCT_MARKER
		 "\"}]},\"name\":\"%s\",\"written\":1}"},
		{"format as text",
		 "{\"format\":\"1\",\"lists\":{\"tools\":[]},\"name\":\"%s\","
		 "\"written\":1}"},
		{"no format",
		 "{\"lists\":{\"tools\":[]},\"name\":\"%s\",\"written\":1,"
		 "\"x\":1}"},
		{"no name",
		 "{\"format\":1,\"lists\":{\"tools\":[]},\"nam\":\"%s\","
		 "\"written\":1}"},
		{"lists not an object",
		 "{\"format\":1,\"lists\":[\"" TCT_MARKER "\"],\"name\":\"%s\","
		 "\"written\":1}"},
		{"tools not an array",
		 "{\"format\":1,\"lists\":{\"tools\":{\"name\":\"" TCT_MARKER
		 "\"}},\"name\":\"%s\",\"written\":1}"},
		{"tools of strings",
		 "{\"format\":1,\"lists\":{\"tools\":[\"" TCT_MARKER
		 "\"]},\"name\":\"%s\",\"written\":1}"},
		{"prompts not an array",
		 "{\"format\":1,\"lists\":{\"prompts\":null,\"tools\":[]},"
		 "\"name\":\"%s\",\"written\":1}"},
		{"unknown list",
		 "{\"format\":1,\"lists\":{\"" TCT_MARKER "\":[]},"
		 "\"name\":\"%s\",\"written\":1}"},
		{"extra field",
		 "{\"format\":1,\"lists\":{\"tools\":[]},\"name\":\"%s\","
		 "\"written\":1,\"" TCT_MARKER "\":true}"},
		{"bad written",
		 "{\"format\":1,\"lists\":{\"tools\":[]},\"name\":\"%s\","
		 "\"written\":\"" TCT_MARKER "\"}"},
		{"duplicate key",
		 "{\"format\":1,\"lists\":{\"tools\":[]},\"lists\":{\"tools\":"
		 "[]},\"name\":\"%s\",\"written\":1}"},
		{"trailing bytes",
		 "{\"format\":1,\"lists\":{\"tools\":[]},\"name\":\"%s\","
		 "\"written\":1} " TCT_MARKER},
	};
	char *name = tct_name("corrupt");
	char *path = tct_path(name);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		/* The formats hold at most one %s, for the name. */
		char *content = xasprintf(cases[i][1], name);
		tct_spit(path, content, strlen(content));
		tct_assert_rejected(name, cases[i][0]);
		free(content);
	}
	/* Bytes after a NUL are still bytes of the file. */
	char nul[] = "{\"format\":1}\0" TCT_MARKER;
	tct_spit(path, nul, sizeof nul - 1);
	tct_assert_rejected(name, "embedded NUL");

	/* The well-formed file the cases were cut from is accepted, so the
	 * rejections above are about the defects. */
	char *good = xasprintf("{\"format\":1,\"lists\":{\"tools\":[]},"
			       "\"name\":\"%s\",\"written\":1}",
			       name);
	tct_spit(path, good, strlen(good));
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert_not_null(got);
	cr_assert_eq(json_array_size(json_object_get(got, "tools")), 0);

	json_decref(got);
	free(good);
	free(path);
	free(name);
}

Test(toolcache, truncated_file_is_ignored)
{
	char *name = tct_name("truncated");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	char *path = tct_path(name);
	size_t len;
	char *text = tct_slurp(path, &len);
	cr_assert_not_null(text);
	size_t cuts[] = {1, len / 3, len / 2, len - 1};
	for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
		cr_assert_eq(truncate(path, (off_t)cuts[i]), 0);
		tct_assert_rejected(name, "truncated");
		tct_spit(path, text, len);
	}
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert(json_equal(got, lists), "restored file not accepted");

	json_decref(got);
	free(text);
	free(path);
	json_decref(lists);
	free(name);
}

Test(toolcache, renamed_file_is_foreign)
{
	char *a = tct_name("server a");
	char *b = tct_name("server b");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, a, lists), 0);
	char *pa = tct_path(a);
	char *pb = tct_path(b);
	cr_assert_eq(rename(pa, pb), 0);
	tct_assert_rejected(b, "renamed");
	json_t *got = toolcache_load(tct_tc, a);
	cr_assert_null(got);

	json_decref(lists);
	free(pb);
	free(pa);
	free(b);
	free(a);
}

Test(toolcache, oversize_file_is_ignored)
{
	char *name = tct_name("oversize");
	char *path = tct_path(name);
	/* Valid in every way but its size: padded with trailing blanks. */
	size_t len = (size_t)TOOLCACHE_MAX_BYTES + 1;
	char *big = xmalloc(len);
	memset(big, ' ', len);
	char *doc = xasprintf("{\"format\":1,\"lists\":{\"tools\":[]},"
			      "\"name\":\"%s\",\"written\":1}",
			      name);
	memcpy(big, doc, strlen(doc));
	tct_spit(path, big, len);
	tct_assert_rejected(name, "oversize");

	/* One byte less is within the limit and loads. */
	cr_assert_eq(truncate(path, (off_t)TOOLCACHE_MAX_BYTES), 0);
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert_not_null(got, "a file at the limit was refused");

	json_decref(got);
	free(doc);
	free(big);
	free(path);
	free(name);
}

Test(toolcache, unreadable_file_is_ignored)
{
	char *name = tct_name("a folder");
	char *path = tct_path(name);
	cr_assert_eq(mkdir(path, 0700), 0);
	tct_assert_rejected(name, "a folder in its place");
	free(path);
	free(name);
}

Test(toolcache, corrupt_file_is_replaced_by_next_store)
{
	char *name = tct_name("recover");
	char *path = tct_path(name);
	tct_spit(path, "{{{", 3);
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert_null(got);
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	got = toolcache_load(tct_tc, name);
	cr_assert(json_equal(got, lists));
	json_decref(got);
	json_decref(lists);
	free(path);
	free(name);
}

Test(toolcache, drop_removes)
{
	char *name = tct_name("drop");
	char *keep = tct_name("keep");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	cr_assert_eq(toolcache_store(tct_tc, keep, lists), 0);
	char *path = tct_path(name);
	cr_assert_eq(access(path, F_OK), 0);
	toolcache_drop(tct_tc, name);
	cr_assert_neq(access(path, F_OK), 0, "file still there");
	cr_assert_eq(errno, ENOENT);
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert_null(got);
	/* Dropping what is gone is fine, and touches no other file. */
	toolcache_drop(tct_tc, name);
	got = toolcache_load(tct_tc, keep);
	cr_assert(json_equal(got, lists));

	json_decref(got);
	free(path);
	json_decref(lists);
	free(keep);
	free(name);
}

Test(toolcache, bad_names_touch_nothing)
{
	char *evil = xasprintf("%s/evil.json", tct_cache);
	tct_spit(evil, "mine", 4);
	static const char *bad[] = {
		"",
		"abc",
		"../evil",
		"00000000000000000000000000000000000000000000000000000000000000"
		"0",
		"00000000000000000000000000000000000000000000000000000000000000"
		"000",
		"ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF01234567"
		"89",
		"../"
		"0000000000000000000000000000000000000000000000000000000000000"
		"0",
		"0000000000000000000000000000000/"
		"00000000000000000000000000000000",
		"00000000000000000000000000000000000000000000000000000000000000"
		"0 ",
	};
	json_t *lists = tct_lists();
	char *tools = xasprintf("%s/tools", tct_cache);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		cr_assert_eq(toolcache_store(tct_tc, bad[i], lists), -EINVAL,
			     "case %zu accepted", i);
		json_t *got = toolcache_load(tct_tc, bad[i]);
		cr_assert_null(got);
		toolcache_drop(tct_tc, bad[i]);
	}
	cr_assert_eq(toolcache_store(tct_tc, NULL, lists), -EINVAL);
	cr_assert_null(toolcache_load(tct_tc, NULL));
	toolcache_drop(tct_tc, NULL);

	int n;
	char *names = tct_list_dir(tools, &n);
	cr_assert_eq(n, 0, "tools/ holds [%s]", names);
	free(names);
	names = tct_list_dir(tct_cache, &n);
	cr_assert_eq(n, 3, "cache holds [%s]", names);
	size_t len;
	char *text = tct_slurp(evil, &len);
	cr_assert_not_null(text, "a bad name removed a file outside tools/");
	cr_assert_str_eq(text, "mine");

	free(text);
	free(names);
	free(tools);
	json_decref(lists);
	free(evil);
}

Test(toolcache, bad_lists_are_refused)
{
	static const char *bad[] = {
		"[]",
		"\"tools\"",
		"null",
		"{\"tools\": {}}",
		"{\"tools\": [1]}",
		"{\"tools\": [{}], \"prompts\": [[]]}",
		"{\"resources\": \"x\"}",
		"{\"tools\": [], \"extra\": []}",
	};
	char *name = tct_name("bad lists");
	char *path = tct_path(name);
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		json_t *l = json_loads(bad[i], JSON_DECODE_ANY, NULL);
		cr_assert_not_null(l);
		cr_assert_eq(toolcache_store(tct_tc, name, l), -EINVAL,
			     "case %s accepted", bad[i]);
		cr_assert_neq(access(path, F_OK), 0);
		json_decref(l);
	}
	cr_assert_eq(toolcache_store(tct_tc, name, NULL), -EINVAL);
	/* Any subset of the four lists, empty ones too, is fine. */
	json_t *empty = json_object();
	cr_assert_eq(toolcache_store(tct_tc, name, empty), 0);
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert(json_equal(got, empty));

	json_decref(got);
	json_decref(empty);
	free(path);
	free(name);
}

Test(toolcache, oversize_store_is_refused)
{
	char *name = tct_name("big store");
	json_t *small = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, small), 0);

	char *filler = xmalloc(TOOLCACHE_MAX_BYTES);
	memset(filler, 'a', TOOLCACHE_MAX_BYTES);
	json_t *big =
		json_pack("{s:[{s:s, s:s%}]}", "tools", "name", "huge",
			  "description", filler, (size_t)TOOLCACHE_MAX_BYTES);
	cr_assert_not_null(big);
	cr_assert_eq(toolcache_store(tct_tc, name, big), -EFBIG);

	/* The old file stands, and no partial file is left behind. */
	json_t *got = toolcache_load(tct_tc, name);
	cr_assert(json_equal(got, small));
	char *tools = xasprintf("%s/tools", tct_cache);
	int n;
	char *names = tct_list_dir(tools, &n);
	cr_assert_eq(n, 1, "tools/ holds [%s]", names);

	free(names);
	free(tools);
	json_decref(got);
	json_decref(big);
	free(filler);
	json_decref(small);
	free(name);
}

Test(toolcache, store_leaves_no_temp_files)
{
	char *name = tct_name("temp");
	json_t *lists = tct_lists();
	for (int i = 0; i < 3; i++)
		cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	char *tools = xasprintf("%s/tools", tct_cache);
	int n;
	char *names = tct_list_dir(tools, &n);
	char *want = xasprintf("%s.json\n", name);
	cr_assert_eq(n, 1, "tools/ holds [%s]", names);
	cr_assert_str_eq(names, want);
	free(names);
	names = tct_list_dir(tct_cache, &n);
	cr_assert_eq(n, 2, "cache holds [%s]", names);

	free(names);
	free(want);
	free(tools);
	json_decref(lists);
	free(name);
}

/* Fails when the secret appears in any file name or content under dir. */
static void tct_assert_no_secret_in(const char *dir, const char *secret)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		cr_assert_null(strstr(e->d_name, secret), "secret in name %s",
			       e->d_name);
		char *path = xasprintf("%s/%s", dir, e->d_name);
		struct stat st;
		cr_assert_eq(lstat(path, &st), 0);
		if (S_ISDIR(st.st_mode)) {
			tct_assert_no_secret_in(path, secret);
		} else {
			size_t len;
			char *text = tct_slurp(path, &len);
			cr_assert_not_null(text);
			cr_assert_null(
				memmem(text, len, secret, strlen(secret)),
				"secret in %s", path);
			free(text);
		}
		free(path);
	}
	closedir(d);
}

static struct config *tct_secret_config(const char *env, const char *hdr)
{
	char *text = xasprintf(
		"{\"mcpServers\": {"
		"\"local\": {\"command\": \"/bin/echo\", \"args\": [\"x\"], "
		"\"env\": {\"API_KEY\": \"%s\", \"MODE\": \"plain\"}},"
		"\"remote\": {\"url\": \"https://example.invalid/mcp\", "
		"\"headers\": {\"Authorization\": \"Bearer %s\"}}}}",
		env, hdr);
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	free(text);
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	cr_assert_eq(cfg->nservers, 2);
	for (size_t i = 0; i < cfg->nservers; i++)
		cr_assert_null(cfg->servers[i].error, "%s",
			       cfg->servers[i].error);
	return cfg;
}

Test(toolcache, secrets_never_reach_the_cache)
{
	struct config *cfg = tct_secret_config(TCT_ENV_SECRET, TCT_HDR_SECRET);
	struct config *cfg2 = tct_secret_config("other-env", "other-hdr");
	const char *salt = toolcache_salt(tct_tc);
	for (size_t i = 0; i < cfg->nservers; i++) {
		const struct server_config *s = &cfg->servers[i];
		const char *secret = i == 0 ? TCT_ENV_SECRET : TCT_HDR_SECRET;

		/* The plain identity does carry the secret, so its absence
		 * below is the fingerprinting at work. */
		json_t *plain = config_server_identity(s, false, NULL);
		char *pdump = json_dumps(plain, JSON_COMPACT);
		cr_assert_not_null(strstr(pdump, secret));

		json_t *ident = config_server_identity(s, true, salt);
		char *name = toolcache_name(ident);
		cr_assert(tct_is_name(name));
		cr_assert_null(strstr(name, secret));
		char *pname = toolcache_name(plain);
		cr_assert_str_neq(name, pname);

		json_t *lists = tct_lists();
		cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
		json_t *got = toolcache_load(tct_tc, name);
		cr_assert(json_equal(got, lists));

		/* A different secret is a different server: another name. */
		json_t *ident2 =
			config_server_identity(&cfg2->servers[i], true, salt);
		char *name2 = toolcache_name(ident2);
		cr_assert_str_neq(name, name2, "server %s: secret not hashed",
				  s->name);

		free(name2);
		json_decref(ident2);
		json_decref(got);
		json_decref(lists);
		free(pname);
		free(name);
		json_decref(ident);
		free(pdump);
		json_decref(plain);
	}
	int n;
	char *tools = xasprintf("%s/tools", tct_cache);
	char *names = tct_list_dir(tools, &n);
	cr_assert_eq(n, 2, "tools/ holds [%s]", names);
	tct_assert_no_secret_in(tct_root, TCT_ENV_SECRET);
	tct_assert_no_secret_in(tct_root, TCT_HDR_SECRET);

	free(names);
	free(tools);
	config_free(cfg2);
	config_free(cfg);
}

/* ---- attached to a loop: no disk I/O on the loop ---- */

Test(toolcache, attached_loads_come_from_memory_and_writes_from_the_pool)
{
	char *old = tct_name("stored before the start");
	char *fresh = tct_name("stored while attached");
	char *gone = tct_name("dropped while attached");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, old, lists), 0);
	cr_assert_eq(toolcache_store(tct_tc, gone, lists), 0);

	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	toolcache_attach(tct_tc, &loop);
	/* Read at attach: the request path no longer needs the file. */
	char *old_path = tct_path(old);
	cr_assert_eq(unlink(old_path), 0);
	json_t *got = toolcache_load(tct_tc, old);
	cr_assert(json_equal(got, lists), "not served from memory");
	json_decref(got);

	/* A store is loadable at once and on disk once the loop ran. */
	char *fresh_path = tct_path(fresh);
	cr_assert_eq(toolcache_store(tct_tc, fresh, lists), 0);
	got = toolcache_load(tct_tc, fresh);
	cr_assert(json_equal(got, lists));
	json_decref(got);
	cr_assert_neq(access(fresh_path, F_OK), 0, "written on the loop");
	/* Several stores and a drop in one turn: the last one wins. */
	json_t *fewer = json_pack("{s:[{s:s}]}", "tools", "name", "only");
	for (int i = 0; i < 5; i++)
		cr_assert_eq(
			toolcache_store(tct_tc, fresh, i % 2 ? lists : fewer),
			0);
	toolcache_drop(tct_tc, gone);
	cr_assert_null(toolcache_load(tct_tc, gone));
	uv_run(&loop, UV_RUN_DEFAULT);
	size_t len = 0;
	char *text = tct_slurp(fresh_path, &len);
	cr_assert_not_null(text, "the store never reached the disk");
	cr_assert_eq(tct_mode(fresh_path), 0600);
	free(text);
	char *gone_path = tct_path(gone);
	cr_assert_neq(access(gone_path, F_OK), 0, "the drop never ran");

	toolcache_detach(tct_tc);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	/* Detached: the disk again, with what the last store wrote. */
	got = toolcache_load(tct_tc, fresh);
	cr_assert(json_equal(got, fewer), "an older store won");
	json_decref(got);
	int files = 0;
	char *dir = xasprintf("%s/tools", tct_cache);
	char *names = tct_list_dir(dir, &files);
	cr_assert_eq(files, 1, "left: %s", names);
	free(names);
	free(dir);

	json_decref(fewer);
	json_decref(lists);
	free(gone_path);
	free(fresh_path);
	free(old_path);
	free(gone);
	free(fresh);
	free(old);
}

/* An attached cache with no files says so, so that nobody computes a
 * name (a SHA-256, which maps much of libcrypto) that cannot match. */
Test(toolcache, empty_until_a_file_or_a_store)
{
	cr_assert(toolcache_empty(NULL));
	/* Detached: only the disk can tell, so never empty. */
	cr_assert_not(toolcache_empty(tct_tc));
	uv_loop_t loop;
	cr_assert_eq(uv_loop_init(&loop), 0);
	toolcache_attach(tct_tc, &loop);
	cr_assert(toolcache_empty(tct_tc), "a new cache has no names");
	char *name = tct_name("first store");
	json_t *lists = tct_lists();
	cr_assert_eq(toolcache_store(tct_tc, name, lists), 0);
	cr_assert_not(toolcache_empty(tct_tc), "a store is a name");
	toolcache_detach(tct_tc);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);

	/* Files on disk at attach are names too. */
	cr_assert_eq(uv_loop_init(&loop), 0);
	toolcache_attach(tct_tc, &loop);
	cr_assert_not(toolcache_empty(tct_tc), "the file was not counted");
	toolcache_detach(tct_tc);
	uv_run(&loop, UV_RUN_DEFAULT);
	cr_assert_eq(uv_loop_close(&loop), 0);
	json_decref(lists);
	free(name);
}
