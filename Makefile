# orgw - GNU make.  One object directory per build flavour so flags never mix.
#   make            build cgi-bin/orgw.fcgi and scheduler/orgw-score
#   make test       install missing Debian packages, build, run every test
#   make check      unit tests under AddressSanitizer + UBSan
#   make run        start lighttpd + spawn-fcgi workers on 127.0.0.1:8080
#   make bench      side-by-side benchmarks (bench/)
#   make dist       dist/orgw-VERSION-linux-x86_64.tar.gz, static, for shared
#                   hosting (deploy/build-dist.sh)
#   make install    programs, man pages, examples, a configuration (PREFIX,
#                   DESTDIR, SYSCONFDIR, MANDIR); make uninstall undoes it
#   make deb        build/deb/orgw_VERSION_ARCH.deb (deploy/debian), lintian

CC      ?= cc
PKGS    := fcgi libcurl libcjson libcrypto hiredis
# pkg-config is asked when a compile or link first needs the answer, not when
# make reads this file: on a fresh machine `make run` installs the -dev
# packages (deps) before anything is built, and an answer taken earlier
# would lack -I/usr/include/cjson.  Each is asked once per make process.
PKG_CFLAGS = $(eval PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null))$(PKG_CFLAGS)
PKG_LIBS   = $(eval PKG_LIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lfcgi -lcurl -lcjson -lcrypto -lhiredis))$(PKG_LIBS)
# The install step; tests/integration/t0010 puts a stand-in here.
DEPS    ?= sh deploy/install-deps.sh

WERROR  ?= -Werror
WARN    := -std=c11 -Wall -Wextra $(WERROR) -Wpedantic -Wshadow -Wformat=2 \
	   -Wstrict-prototypes -Wmissing-prototypes -Wwrite-strings -Wvla -Wcast-qual \
	   -Wundef -Wpointer-arith
OPT     ?= -O2 -g -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
SAN     := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
	   -fno-sanitize-recover=all
CPPFLAGS += -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Isrc $(PKG_CFLAGS) -MMD -MP
LDLIBS   = $(PKG_LIBS) -lgdbm -lm -pthread

FLAVOUR ?= release
B       := build/$(FLAVOUR)
ifeq ($(FLAVOUR),asan)
CFLAGS  := $(WARN) $(SAN)
LDFLAGS := $(SAN)
else
CFLAGS  := $(WARN) $(OPT)
LDFLAGS := -pie -Wl,-z,relro,-z,now
endif

# Test-only code: the unit tests' in-memory back-end and the test clock
# (ORGW_TEST_NOW).  Linked into the unit tests and the test builds of the
# binaries ($(B)/orgw.fcgi-test, $(B)/orgw-score-test, which the
# integration tests that move the clock run), never into liborgw.a or
# the shipped binaries (tests/check-shipped.sh, part of make lint).
TEST_ONLY := src/store_mem.c src/clock_test.c
SRC     := $(filter-out $(TEST_ONLY),$(wildcard src/*.c))
OBJ     := $(patsubst src/%.c,$(B)/src/%.o,$(SRC))
TEST_OBJ := $(patsubst src/%.c,$(B)/src/%.o,$(TEST_ONLY))
LIB     := $(B)/liborgw.a
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(patsubst tests/unit/%.c,$(B)/tests/%,$(UNIT_SRC))
FUZZ_SRC := $(filter-out tests/fuzz/fuzz_main.c,$(wildcard tests/fuzz/fuzz_*.c))
FUZZ_REPLAY := $(patsubst tests/fuzz/%.c,$(B)/tests/replay_%,$(FUZZ_SRC))

GATEWAY := cgi-bin/orgw.fcgi
SCORER  := scheduler/orgw-score

# Core modules must stay free of I/O libraries (docs/style.md 1).
CORE    := src/route.c src/score.c src/failover.c src/sse.c src/reqval.c \
	   src/api.c src/api_chat.c src/api_messages.c src/api_responses.c \
	   src/jsonscan.c src/conf.c src/conf_value.c src/conf_list.c src/conf_parse.c \
	   src/record.c src/ledger.c src/ledger_render.c src/ledger_price.c \
	   src/teamkey.c src/teamkey_codec.c src/teamkey_rate.c src/buf.c src/mask.c \
	   src/statuspage.c src/statuspage_chart.c src/statuspage_routing.c src/statuspage_keys.c \
	   src/statuspage_conv.c src/statuslogin.c src/prom.c src/latency.c src/redisconf.c src/guard.c \
	   src/dump.c src/load.c src/memo.c src/version.c src/fingerprint.c src/convcache.c \
	   src/conv.c src/convroute.c src/convbody.c src/statekeys.c src/hold.c \
	   src/convlist.c

.PHONY: all test check unit run bench soak clean deps deps-test check-layers check-shipped cppcheck lint install fuzz \
	dist man uninstall deb
.SECONDARY:

all: $(GATEWAY) $(SCORER)

# V=1 shows the full command lines.
ifeq ($(V),1)
Q :=
else
Q := @
endif

$(B)/src/%.o: src/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# The release, from one file: version.c alone is built with it, and again
# when it changes.  A version is digits and dots only (checked here, so no
# quoting can break the command line).
VERSION := $(shell cat VERSION)
ifeq ($(shell printf '%s' '$(VERSION)' | grep -Ex '[0-9]+\.[0-9]+\.[0-9]+'),)
$(error VERSION must be MAJOR.MINOR.PATCH, not '$(VERSION)')
endif
$(B)/src/version.o: CPPFLAGS += -DORGW_VERSION='"$(VERSION)"'
$(B)/src/version.o: VERSION
$(B)/tests/test_version.o: CPPFLAGS += -DT_VERSION_FILE='"$(VERSION)"'
$(B)/tests/test_version.o: VERSION

$(LIB): $(OBJ)
	@rm -f $@
	@$(if $(Q),echo "  AR      $@")
	$(Q)ar rcs $@ $^

$(B)/cgi-bin/orgw.o: cgi-bin/orgw.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/scheduler/%.o: scheduler/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(B)/orgw.fcgi: $(B)/cgi-bin/orgw.o $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

SCORER_OBJ := $(patsubst scheduler/%.c,$(B)/scheduler/%.o,$(wildcard scheduler/*.c))

$(B)/orgw-score: $(SCORER_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The same programs with the test-only objects (TEST_ONLY) linked in.
$(B)/orgw.fcgi-test: $(B)/cgi-bin/orgw.o $(TEST_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(B)/orgw-score-test: $(SCORER_OBJ) $(TEST_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

TEST_BINS := $(B)/orgw.fcgi-test $(B)/orgw-score-test

$(GATEWAY): $(B)/orgw.fcgi
	$(Q)cp -f $< $@

$(SCORER): $(B)/orgw-score
	$(Q)cp -f $< $@

$(B)/tests/%.o: tests/unit/%.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(CPPFLAGS) -Itests/unit $(CFLAGS) -c -o $@ $<

$(B)/tests/test_%: $(B)/tests/test_%.o $(TEST_OBJ) $(LIB)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Fuzz targets replayed over their corpora under gcc (tests/fuzz/fuzz_main.c).
$(B)/tests/replay_%: tests/fuzz/%.c tests/fuzz/fuzz_main.c $(LIB)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT_BIN) $(FUZZ_REPLAY) $(TEST_BINS)

# Every target that installs what is missing builds in a second make, which
# reads this file again once the packages are there (a fresh machine).
deps:
	@$(DEPS)

# make run needs the build and lighttpd; the tests also the other servers.
deps-test:
	@ORGW_DEPS_TEST=1 $(DEPS)

# make test builds with a job per core, unless make was given -j itself (the
# sub-makes then share its job slots).
TEST_MAKE_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))

test: deps-test
	@$(MAKE) --no-print-directory lint
	$(MAKE) $(TEST_MAKE_JOBS) all unit
	$(MAKE) $(TEST_MAKE_JOBS) FLAVOUR=asan unit
	@sh tests/run.sh

check: deps-test
	$(MAKE) FLAVOUR=asan unit
	@ORGW_UNIT_ONLY=1 ORGW_BUILD=build/asan sh tests/run.sh

run: deps
	$(MAKE) all
	@sh deploy/run-local.sh

bench: deps
	$(MAKE) all
	@sh bench/run.sh

soak: deps
	$(MAKE) all
	@sh tests/soak.sh

# The static shared-hosting tarball; its libcurl and cJSON are built from
# Debian's source packages once and kept in dist/build.
dist:
	@ORGW_DEPS_DIST=1 $(DEPS)
	@sh deploy/build-dist.sh

# libFuzzer targets, FUZZ_TIME seconds each (docs/style.md 9, 11); clang only.
FUZZ_TIME ?= 60
fuzz: deps
	@FUZZ_TIME=$(FUZZ_TIME) sh tests/fuzz/run-fuzz.sh

check-layers:
	@bad=$$(grep -lE '#include[[:space:]]*<(fcgiapp|fcgi_stdio|curl/curl|gdbm|hiredis/hiredis|hiredis)\.h>' $(CORE) 2>/dev/null); \
	if [ -n "$$bad" ]; then echo "I/O header in pure core: $$bad"; exit 1; fi; \
	bad=$$(grep -nE '\b(getenv|time|sleep|usleep|nanosleep|clock_gettime)[[:space:]]*\(' $(CORE)); \
	if [ -n "$$bad" ]; then echo "clock/env call in pure core:"; echo "$$bad"; exit 1; fi; \
	sh tests/check-layers.sh || exit 1; \
	echo "check-layers: ok"

# The shipped binaries hold no test-only code (TEST_ONLY); the test
# builds are made too, so the check knows what it looks for.
check-shipped: all $(TEST_BINS)
	@sh tests/check-shipped.sh || exit 1; \
	echo "check-shipped: ok"

# cppcheck's warnings (tests/cppcheck/: cJSON's macros modelled, the
# suppressions with their reasons); a finding fails the build.
CPPCHECK ?= cppcheck
cppcheck:
	@command -v $(CPPCHECK) >/dev/null || { echo "cppcheck missing (make deps-test)"; exit 1; }
	$(Q)$(CPPCHECK) -q --std=c11 --enable=warning,portability,performance \
		--library=tests/cppcheck/cjson.cfg \
		--suppressions-list=tests/cppcheck/suppressions.txt \
		--inline-suppr --error-exitcode=1 -j2 \
		--template='{file}:{line}: {severity}: {id}: {message}' \
		-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -DORGW_VERSION=\"lint\" -Isrc \
		src cgi-bin scheduler
	@echo "cppcheck: ok"

lint: check-layers check-shipped cppcheck
	@bad=$$(grep -nE '\b(sprintf|strcpy|strcat|strtok|gets|atoi|atol|system)[[:space:]]*\(' src/*.c cgi-bin/*.c scheduler/*.c); \
	if [ -n "$$bad" ]; then echo "banned function:"; echo "$$bad"; exit 1; fi; \
	echo "lint: ok"

# Man pages with the version filled in (docs/man holds them with @VERSION@).
MAN_SRC := $(wildcard docs/man/*.5 docs/man/*.7 docs/man/*.8)
MAN_OUT := $(patsubst docs/man/%,build/man/%,$(MAN_SRC))
man: $(MAN_OUT)
build/man/%: docs/man/% VERSION
	@mkdir -p $(@D)
	$(Q)sed 's/@VERSION@/$(VERSION)/g' $< > $@

# make install [PREFIX=/usr/local] [DESTDIR=] [SYSCONFDIR=/etc] [MANDIR=...]
# The configuration goes to SYSCONFDIR/orgw/orgw.conf (mode 0600) only when
# there is none: an administrator's file is never overwritten.  The cron
# line, the systemd unit and the web-server configurations go to the
# examples directory, their program paths made this install's: putting
# them in /etc/cron.d, /etc/systemd and the web server's directories is the
# administrator's choice (the Debian package, make deb, does it).
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
CGIDIR     ?= $(PREFIX)/lib/cgi-bin
SYSCONFDIR ?= /etc
MANDIR     ?= $(PREFIX)/share/man
DOCDIR     ?= $(PREFIX)/share/doc/orgw
EXAMPLEDIR ?= $(DOCDIR)/examples
CONFDIR    := $(SYSCONFDIR)/orgw
EXAMPLES   := deploy/crontab deploy/orgw.service deploy/lighttpd.conf \
	      deploy/nginx.conf deploy/Caddyfile deploy/apache-fcgid.conf \
	      deploy/htaccess deploy/orgw.conf.example
# The configuration installed is the example with its two placeholder keys
# commented out: a gateway started before the administrator sets them fails
# closed (503) instead of taking "change-me-too" as its client key.
CONF_KEYS_OFF := s/^\(OPENROUTER_API_KEY\|CUSTOM_ACCESS_KEY\)=/\#&/
# The installed copies name the installed programs and configuration.
INSTALL_PATHS := s|/usr/local/lib/cgi-bin/orgw.fcgi|$(CGIDIR)/orgw.fcgi|g; \
	s|/usr/local/bin/orgw-score|$(BINDIR)/orgw-score|g; \
	s|/etc/orgw/orgw.conf|$(CONFDIR)/orgw.conf|g

install: all man
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(CGIDIR) $(DESTDIR)$(EXAMPLEDIR) \
		$(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man7 $(DESTDIR)$(MANDIR)/man8
	install -m 0755 $(GATEWAY) $(DESTDIR)$(CGIDIR)/orgw.fcgi
	install -m 0755 $(SCORER) $(DESTDIR)$(BINDIR)/orgw-score
	install -m 0644 build/man/*.5 $(DESTDIR)$(MANDIR)/man5/
	install -m 0644 build/man/*.7 $(DESTDIR)$(MANDIR)/man7/
	install -m 0644 build/man/*.8 $(DESTDIR)$(MANDIR)/man8/
	for f in $(EXAMPLES); do \
		sed '$(INSTALL_PATHS)' $$f > $(DESTDIR)$(EXAMPLEDIR)/$${f##*/} && \
		chmod 0644 $(DESTDIR)$(EXAMPLEDIR)/$${f##*/} || exit 1; \
	done
	install -m 0644 CHANGELOG $(DESTDIR)$(DOCDIR)/CHANGELOG
	install -d -m 0755 $(DESTDIR)$(CONFDIR)
	@if [ -e $(DESTDIR)$(CONFDIR)/orgw.conf ]; then \
		echo "install: $(DESTDIR)$(CONFDIR)/orgw.conf exists, left as it is"; \
	else \
		echo "install: $(DESTDIR)$(CONFDIR)/orgw.conf (mode 0600), the keys to be set"; \
		(umask 077 && sed '$(CONF_KEYS_OFF)' $(DESTDIR)$(EXAMPLEDIR)/orgw.conf.example \
			> $(DESTDIR)$(CONFDIR)/orgw.conf) || exit 1; \
	fi

# Removes what install put there: the configuration only while it is still
# the example (an administrator's edits stay), and the directories of orgw's
# own only when empty.
uninstall:
	rm -f $(DESTDIR)$(CGIDIR)/orgw.fcgi $(DESTDIR)$(BINDIR)/orgw-score
	rm -f $(patsubst docs/man/%,$(DESTDIR)$(MANDIR)/man5/%,$(filter %.5,$(MAN_SRC)))
	rm -f $(patsubst docs/man/%,$(DESTDIR)$(MANDIR)/man7/%,$(filter %.7,$(MAN_SRC)))
	rm -f $(patsubst docs/man/%,$(DESTDIR)$(MANDIR)/man8/%,$(filter %.8,$(MAN_SRC)))
	@if [ -f $(DESTDIR)$(CONFDIR)/orgw.conf ] && [ -f $(DESTDIR)$(EXAMPLEDIR)/orgw.conf.example ] && \
	    sed '$(CONF_KEYS_OFF)' $(DESTDIR)$(EXAMPLEDIR)/orgw.conf.example | \
	    cmp -s - $(DESTDIR)$(CONFDIR)/orgw.conf; then \
		echo "rm -f $(DESTDIR)$(CONFDIR)/orgw.conf"; \
		rm -f $(DESTDIR)$(CONFDIR)/orgw.conf; \
	elif [ -e $(DESTDIR)$(CONFDIR)/orgw.conf ]; then \
		echo "uninstall: $(DESTDIR)$(CONFDIR)/orgw.conf was changed, left as it is"; \
	fi
	rm -f $(patsubst deploy/%,$(DESTDIR)$(EXAMPLEDIR)/%,$(EXAMPLES)) $(DESTDIR)$(DOCDIR)/CHANGELOG
	-rmdir $(DESTDIR)$(EXAMPLEDIR) $(DESTDIR)$(DOCDIR) $(DESTDIR)$(CONFDIR) 2>/dev/null

# make deb: build/deb/orgw_VERSION_ARCH.deb, built by debhelper in a copy of
# the tree with deploy/debian as its debian/ directory, then checked by
# lintian (the build fails on an error; deploy/debian/orgw.lintian-overrides
# gives the reason for each tag it silences).
DEB_DIR := build/deb
DEB_SRC := $(DEB_DIR)/orgw-$(VERSION)
deb:
	@ORGW_DEPS_DEB=1 $(DEPS)
	rm -rf $(DEB_DIR)
	mkdir -p $(DEB_SRC)
	tar -cf - Makefile VERSION CHANGELOG src cgi-bin scheduler docs/man \
		deploy/*.conf deploy/Caddyfile deploy/crontab deploy/htaccess \
		deploy/orgw.conf.example deploy/orgw.service | tar -C $(DEB_SRC) -xf -
	cp -R deploy/debian $(DEB_SRC)/debian
	@v=$$(cd $(DEB_SRC) && dpkg-parsechangelog -S Version); \
	if [ "$$v" != "$(VERSION)" ]; then \
		echo "deploy/debian/changelog is at $$v, VERSION at $(VERSION): add an entry" >&2; \
		exit 1; \
	fi
	cd $(DEB_SRC) && dpkg-buildpackage -us -uc -b
	lintian --fail-on error --info $(DEB_DIR)/orgw_$(VERSION)_*.deb
	@ls $(DEB_DIR)/orgw_$(VERSION)_*.deb

clean:
	rm -rf build run dist $(GATEWAY) $(SCORER)

-include $(OBJ:.o=.d) $(TEST_OBJ:.o=.d) $(UNIT_BIN:=.d) $(FUZZ_REPLAY:=.d) \
	 $(B)/cgi-bin/orgw.d $(SCORER_OBJ:.o=.d)
