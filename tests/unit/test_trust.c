/*
 * Unit tests for who may use the runtime and what it runs: the trust store
 * of spaces (allow, change, revoke), the API keys (config field, key file,
 * matching), the masking of configured secrets, and the peer uid of a
 * loopback TCP connection as the kernel reports it.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config/config.h"
#include "config/secrets.h"
#include "endpoint/auth.h"
#include "endpoint/peer.h"
#include "trust/trust.h"
#include "util/xmalloc.h"

static char tt_dir[] = "/tmp/mcpvisor-trust-XXXXXX";
static char *tt_state, *tt_space, *tt_file;

static void tt_write(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static void tt_setup(void)
{
	cr_assert_not_null(mkdtemp(tt_dir));
	tt_state = xasprintf("%s/state", tt_dir);
	tt_space = xasprintf("%s/space", tt_dir);
	mkdir(tt_space, 0755);
	tt_file = xasprintf("%s/.mcp.json", tt_space);
	tt_write(tt_file,
		 "{\"mcpServers\": {\"pwn\": {\"command\": "
		 "\"/bin/sh\"}, \"demo\": {\"command\": \"/bin/x\"}}}");
}

static void tt_teardown(void)
{
	char *cmd = xasprintf("rm -rf %s", tt_dir);
	cr_assert_eq(system(cmd), 0);
	free(cmd);
	free(tt_state);
	free(tt_space);
	free(tt_file);
}

TestSuite(trust, .init = tt_setup, .fini = tt_teardown);

static const struct server_config *tt_find(const struct config *cfg,
					   const char *name)
{
	return config_find(cfg, name);
}

Test(trust, a_space_is_untrusted_until_allowed)
{
	struct config *cfg = trust_load_space(tt_state, tt_file, NULL);
	cr_assert_null(cfg->fatal);
	const struct server_config *pwn = tt_find(cfg, "pwn");
	cr_assert_not_null(pwn);
	cr_assert_not_null(pwn->untrusted);
	cr_assert(strstr(pwn->untrusted, "mcpvisor allow ") != NULL);
	cr_assert(strstr(pwn->untrusted, "/space") != NULL);
	cr_assert(strstr(pwn->error, "untrusted") != NULL);
	config_free(cfg);

	char *msg = NULL;
	cr_assert_eq(trust_allow(tt_state, tt_space, &msg), 0, "%s", msg);
	free(msg);
	char *store = xasprintf("%s/trust.json", tt_state);
	struct stat st;
	cr_assert_eq(stat(store, &st), 0);
	cr_assert_eq(st.st_mode & 0777, 0600, "store mode %o", st.st_mode);
	free(store);
	cfg = trust_load_space(tt_state, tt_file, NULL);
	cr_assert_null(tt_find(cfg, "pwn")->untrusted);
	cr_assert_null(tt_find(cfg, "pwn")->error);
	config_free(cfg);
}

Test(trust, a_changed_file_needs_allowing_again_and_revoke_forgets)
{
	char *msg = NULL;
	cr_assert_eq(trust_allow(tt_state, tt_space, &msg), 0);
	free(msg);
	tt_write(tt_file, "{\"mcpServers\": {\"pwn\": {\"command\": "
			  "\"/bin/sh\", \"args\": [\"-c\", \"id\"]}}}");
	struct config *cfg = trust_load_space(tt_state, tt_file, NULL);
	cr_assert_not_null(tt_find(cfg, "pwn")->untrusted);
	cr_assert(strstr(tt_find(cfg, "pwn")->error, "changed") != NULL);
	config_free(cfg);

	cr_assert_eq(trust_allow(tt_state, tt_space, &msg), 0);
	free(msg);
	cr_assert_eq(trust_revoke(tt_state, tt_space, &msg), 0);
	free(msg);
	cfg = trust_load_space(tt_state, tt_file, NULL);
	cr_assert_not_null(tt_find(cfg, "pwn")->untrusted);
	config_free(cfg);
}

Test(trust, an_untrusted_space_does_not_override_global_servers)
{
	const char *g =
		"{\"mcpServers\": {\"demo\": {\"command\": \"/bin/y\"}}}";
	struct config *global = config_parse(g, strlen(g), "g.json");
	struct config *cfg = trust_load_space(tt_state, tt_file, global);
	cr_assert_null(tt_find(cfg, "demo"), "the override is left out");
	cr_assert_not_null(tt_find(cfg, "pwn"));
	cr_assert_eq(cfg->nservers, 1);
	config_free(cfg);
	config_free(global);
}

Test(trust, allow_of_a_folder_without_a_file_says_so)
{
	char *msg = NULL;
	cr_assert_lt(trust_allow(tt_state, tt_dir, &msg), 0);
	cr_assert(strstr(msg, "nothing to allow") != NULL, "%s", msg);
	free(msg);
}

Test(secrets, masks_env_header_var_args_and_api_keys_longest_first)
{
	setenv("TT_SECRET", "var-secret-1234", 1);
	const char *text =
		"{\"apiKeys\": [\"the-api-key-1\"], \"mcpServers\": {\"s\": "
		"{\"command\": \"/bin/x\", \"args\": [\"${TT_SECRET}\", "
		"\"plain\"], \"env\": {\"TOKEN\": \"s3cr3t\", \"SECRET\": "
		"\"s3cr3t-XYZ\", "
		"\"D\": \"1\", \"MODE\": \"production\"}}}}";
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	cr_assert_eq(cfg->napi_keys, 1);
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *m = secrets_mask(sec, "token=s3cr3t-XYZ var=var-secret-1234 "
				    "key=the-api-key-1 plain 1 s3cr3t "
				    "production");
	/* An env value that is neither named nor shaped like a secret is
	 * no secret: masking it would garble every line it is in. */
	cr_assert_str_eq(m, "token=*** var=*** key=*** plain 1 *** production");
	free(m);
	secrets_free(sec);
	config_free(cfg);
}

Test(secrets, masks_what_a_url_carries)
{
	const char *text = "{\"mcpServers\": {\"r\": {\"url\": "
			   "\"https://user:pw-1234@h.example/mcp?key=qk-5678&x="
			   "1#f\"}}}";
	struct config *cfg = config_parse(text, strlen(text), "t.json");
	cr_assert_null(cfg->fatal, "%s", cfg->fatal);
	struct secrets *sec = secrets_new();
	secrets_add_config(sec, cfg);
	char *m = secrets_mask(sec, "GET /mcp?key=qk-5678 as user:pw-1234 x=1");
	cr_assert_str_eq(m, "GET /mcp?key=*** as *** x=1");
	free(m);
	secrets_free(sec);
	config_free(cfg);
}

Test(apikeys, bad_keys_make_the_file_unusable_without_quoting_them)
{
	const char *t1 = "{\"apiKeys\": \"k\", \"mcpServers\": {}}";
	struct config *cfg = config_parse(t1, strlen(t1), "t.json");
	cr_assert_not_null(cfg->fatal);
	config_free(cfg);
	unsetenv("TT_UNSET_KEY");
	const char *t2 =
		"{\"apiKeys\": [\"${TT_UNSET_KEY}\"], \"mcpServers\": {}}";
	cfg = config_parse(t2, strlen(t2), "t.json");
	cr_assert(strstr(cfg->fatal, "TT_UNSET_KEY") != NULL);
	config_free(cfg);
	const char *t3 = "{\"apiKeys\": [\"has space-secret\"], "
			 "\"mcpServers\": {}}";
	cfg = config_parse(t3, strlen(t3), "t.json");
	cr_assert_not_null(cfg->fatal);
	cr_assert(strstr(cfg->fatal, "space-secret") == NULL, "%s", cfg->fatal);
	config_free(cfg);
}

Test(apikeys, key_file_must_be_private_and_keys_match_exactly)
{
	char dir[] = "/tmp/mcpvisor-keys-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char *path = xasprintf("%s/keys", dir);
	tt_write(path, "# comment\n\n  key-one-0001  \nkey-two-0002\n");
	chmod(path, 0644);
	char *err = NULL;
	cr_assert_eq(auth_keys_load_file(path, &err), -EPERM);
	cr_assert(strstr(err, "chmod 600") != NULL, "%s", err);
	free(err);
	chmod(path, 0600);
	err = NULL;
	cr_assert_eq(auth_keys_load_file(path, &err), 0, "%s", err);
	cr_assert_eq(auth_file_key_count(), 2);
	cr_assert(auth_key_match(NULL, 0, "key-one-0001", 12));
	cr_assert(auth_key_match(NULL, 0, "key-two-0002", 12));
	cr_assert_not(auth_key_match(NULL, 0, "key-two-000", 11));
	cr_assert_not(auth_key_match(NULL, 0, "# comment", 9));
	char *cfg_keys[] = {"cfg-key"};
	cr_assert(auth_key_match(cfg_keys, 1, "cfg-key", 7));
	auth_keys_clear();
	cr_assert_not(auth_key_match(NULL, 0, "key-one-0001", 12));
	unlink(path);
	rmdir(dir);
	free(path);
}

/* A listener on 127.0.0.1 and a connection to it from a child that runs
 * as uid; the accepted socket's peer uid as the kernel reports it. */
static uid_t tt_peer_of_child(uid_t uid)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	cr_assert_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
	socklen_t al = sizeof a;
	getsockname(l, (struct sockaddr *)&a, &al);
	cr_assert_eq(listen(l, 4), 0);
	pid_t pid = fork();
	if (pid == 0) {
		if (uid != geteuid() && setuid(uid) < 0)
			_exit(2);
		int c = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(c, (struct sockaddr *)&a, sizeof a) < 0)
			_exit(3);
		char b;
		(void)read(c, &b, 1); /* held open until the parent looked */
		_exit(0);
	}
	int s = accept(l, NULL, NULL);
	cr_assert_geq(s, 0);
	uid_t got = (uid_t)-1, proc = (uid_t)-2;
	cr_assert_eq(peer_tcp_uid(s, &got), 0);
	cr_assert_eq(peer_tcp_uid_proc(s, &proc), 0);
	cr_assert_eq(got, proc, "sock_diag %u, /proc/net/tcp %u", (unsigned)got,
		     (unsigned)proc);
	close(s);
	close(l);
	int st;
	waitpid(pid, &st, 0);
	return got;
}

Test(peer, a_loopback_connection_names_its_user)
{
	cr_assert_eq(tt_peer_of_child(geteuid()), geteuid());
	if (geteuid() == 0)
		cr_assert_eq(tt_peer_of_child(65534), 65534,
			     "a connection from nobody is nobody's");
}
