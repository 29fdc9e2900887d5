# mcpvisor: one small daemon that owns an agent host's MCP servers.
# Plain make + pkg-config. `make run` and `make test` install what is missing.

PREFIX ?= /usr/local
CC ?= cc
PKGS := libuv jansson
# The flags are read when make parses this file. `run`, `test`, `e2e`,
# `conformance` and `bench` install missing packages first and then run a
# second make that reads the flags of what is now there.
# libcurl: its headers only. It is loaded with dlopen on first outbound
# HTTP (src/http/curlso.c), so a runtime that never needs it never maps it.
# libcrypto too: loaded on the first SHA-256 (src/util/sha256.c), so an
# idle runtime does not map it.
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) libcurl libcrypto 2>/dev/null)
PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -lhttp_parser

WARN := -std=c11 -Wall -Wextra -Werror -Wshadow -Wno-unused-parameter
DEFS := -D_GNU_SOURCE
CFLAGS_REL := -O2 -g $(WARN) $(DEFS) -Isrc $(PKG_CFLAGS)
CFLAGS_SAN := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	-fno-sanitize-recover=undefined $(WARN) $(DEFS) -Isrc $(PKG_CFLAGS)
LDFLAGS_SAN := -fsanitize=address,undefined

LIB_SRC := $(filter-out src/main.c,$(shell find src -name '*.c' | sort))
HDRS := $(shell find src -name '*.h')
# Each fixture is its own file plus the shared HTTP serving layer.
DEMO_PROGS := demo-server conformance-server
DEMO_LIB := $(wildcard demo/fixture-*.c)
DEMO_HDRS := $(wildcard demo/*.h)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
# The unit tests' shared fixtures: a change to one rebuilds every test.
UNIT_HDRS := $(wildcard tests/unit/*.h)
BENCH_SRC := $(wildcard bench/*.c)

REL := build/release
SAN := build/san

REL_OBJ := $(LIB_SRC:%.c=$(REL)/%.o)
SAN_OBJ := $(LIB_SRC:%.c=$(SAN)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(SAN)/unit/%)
DEMO_BIN := $(DEMO_PROGS:%=build/%)
DEMO_SAN := $(DEMO_PROGS:%=$(SAN)/%)

.PHONY: all run test test-build unit e2e deps test-deps npm-deps format format-check \
	install clean conformance bench bench-deps fuzz fuzz-build test-images

all: build/mcpvisor $(DEMO_BIN)

build/mcpvisor: $(REL_OBJ) $(REL)/src/main.o
	$(CC) -o $@ $^ $(PKG_LIBS)

$(REL)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_REL) -c -o $@ $<

$(SAN)/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_SAN) -c -o $@ $<

# A fixture's own further files are prerequisites of its program (below);
# the fixture recipes link every .c prerequisite.
build/%: demo/%.c $(DEMO_LIB) $(DEMO_HDRS)
	@mkdir -p build
	$(CC) $(CFLAGS_REL) -o $@ $(filter %.c,$^) $(PKG_LIBS)

$(SAN)/mcpvisor: $(SAN_OBJ) $(SAN)/src/main.o
	$(CC) $(LDFLAGS_SAN) -o $@ $^ $(PKG_LIBS)

$(SAN)/%: demo/%.c $(DEMO_LIB) $(DEMO_HDRS)
	@mkdir -p $(SAN)
	$(CC) $(CFLAGS_SAN) $(LDFLAGS_SAN) -o $@ $(filter %.c,$^) $(PKG_LIBS)

build/conformance-server $(SAN)/conformance-server: demo/conformance-asks.c

# The container tests' image: the demo fixture linked statically (Debian
# ships the .a of each library), alone in a tarball with fixed owners and
# times, so the same sources give the same bytes and the same image layer.
# tests/containers/image.sh imports it with podman.
IMG := build/images

$(IMG)/demo-server: demo/demo-server.c $(DEMO_LIB) $(DEMO_HDRS)
	@mkdir -p $(IMG)
	$(CC) -O2 $(WARN) $(DEFS) -Isrc -static -o $@ $< $(DEMO_LIB) \
		-ljansson -luv_a -lcrypto -lhttp_parser -lpthread -ldl

$(IMG)/fixture.tar: $(IMG)/demo-server
	@rm -rf $(IMG)/root && mkdir -p $(IMG)/root
	cp $< $(IMG)/root/demo-server
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C $(IMG)/root -cf $@ .

test-images: $(IMG)/fixture.tar

build/bench/%: bench/%.c
	@mkdir -p build/bench
	$(CC) $(CFLAGS_REL) -o $@ $< $(PKG_LIBS)

# The bench's libcurl client links libcurl itself (the runtime loads it).
build/bench/curl-alone: PKG_LIBS += $(shell pkg-config --libs libcurl 2>/dev/null)

$(SAN)/unit/%: tests/unit/%.c $(SAN_OBJ) $(UNIT_HDRS)
	@mkdir -p $(SAN)/unit
	$(CC) $(CFLAGS_SAN) $(LDFLAGS_SAN) -Itests -o $@ $< $(SAN_OBJ) \
		$(PKG_LIBS) -lcriterion

deps:
	@sh scripts/deps.sh

# What only the tests need on top (the container engine).
test-deps:
	@sh scripts/deps.sh test

# What only make bench needs on top (nginx, wrk, curl, valgrind, strace).
bench-deps:
	@sh scripts/deps.sh bench

npm-deps:
	@sh scripts/npm-deps.sh

run: deps
	@$(MAKE) --no-print-directory all
	./build/mcpvisor serve --config examples/demo.json

test: test-deps npm-deps format-check
	@$(MAKE) --no-print-directory test-build fuzz-build
	@sh tests/run.sh

test-build: $(SAN)/mcpvisor $(DEMO_SAN) $(UNIT_BIN) $(IMG)/fixture.tar

unit: $(SAN)/mcpvisor $(DEMO_SAN) $(UNIT_BIN)
	@sh tests/run.sh unit

e2e: test-deps npm-deps
	@$(MAKE) --no-print-directory $(SAN)/mcpvisor $(DEMO_SAN) $(IMG)/fixture.tar
	@sh tests/run.sh e2e

conformance: deps npm-deps
	@$(MAKE) --no-print-directory $(SAN)/mcpvisor $(DEMO_SAN)
	@sh tests/run.sh conformance

BENCH_BIN := $(BENCH_SRC:bench/%.c=build/bench/%)

# Fuzzing: one libFuzzer harness per parser in tests/fuzz/, linked against
# the parsers' folders compiled by clang with the fuzzer's coverage hooks
# (an archive, so each harness pulls in only the objects it needs).
# `make fuzz` runs each for FUZZ_SECONDS; `make test` runs each briefly.
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ := build/fuzz
FUZZ_TARGETS := $(patsubst tests/fuzz/fuzz_%.c,%,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_TARGETS:%=$(FUZZ)/fuzz_%)
FUZZ_LIB_SRC := $(filter src/http/% src/util/% src/jsonrpc/framer.c \
	src/config/% src/auth/www_auth.c src/auth/meta.c src/auth/form.c \
	src/auth/scope.c src/auth/urls.c src/jsonrpc/jsonrpc.c \
	src/jsonrpc/envelope% src/modern/reqstate.c,$(LIB_SRC))
FUZZ_OBJ := $(FUZZ_LIB_SRC:%.c=$(FUZZ)/obj/%.o)
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined
CFLAGS_FUZZ := -O1 -g -fno-omit-frame-pointer -fsanitize=fuzzer-no-link \
	$(FUZZ_SAN) $(WARN) $(DEFS) -Isrc $(PKG_CFLAGS)

$(FUZZ)/obj/%.o: %.c $(HDRS)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(CFLAGS_FUZZ) -c -o $@ $<

$(FUZZ)/libmcpv.a: $(FUZZ_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ)/libmcpv.a $(HDRS)
	$(FUZZ_CC) $(CFLAGS_FUZZ) -fsanitize=fuzzer -o $@ $< \
		$(FUZZ)/libmcpv.a $(PKG_LIBS)

fuzz-build: $(FUZZ_BIN)

fuzz: deps
	@$(MAKE) --no-print-directory fuzz-build
	@FUZZ_EDGE_CORPUS=1 sh tests/fuzz/run.sh $(FUZZ_SECONDS) $(FUZZ_TARGETS)

bench: bench-deps
	@$(MAKE) --no-print-directory all $(BENCH_BIN)
	@sh bench/run.sh

format:
	clang-format -i $(shell find src demo tests/unit tests/fuzz bench -name '*.[ch]')

format-check:
	@clang-format --dry-run -Werror $(shell find src demo tests/unit tests/fuzz bench -name '*.[ch]')

install: build/mcpvisor
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 build/mcpvisor $(DESTDIR)$(PREFIX)/bin/mcpvisor

clean:
	rm -rf build
