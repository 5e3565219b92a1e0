# pg_relay - top-level Makefile.
#
#   make            build the Processor (processor/build/release/pg_relay), its systemd unit and its
#                   config and environment files (build/: made from packaging/*.in for BINDIR,
#                   SYSCONFDIR and DOCDIR)
#   make install    install both extensions (PGXS), the Processor, its man page, systemd unit,
#                   sysusers.d file and documentation, and (when absent) /etc/pg_relay with the
#                   config file, the environment file and the secrets directory
#   make uninstall  remove what make install put down, except /etc/pg_relay (config and secrets)
#                   and the pg_relay system user
#   make check      every test on throwaway clusters: C unit tests, SQL regression and isolation
#                   tests, end-to-end tests with real PostgreSQL, SMTP and TLS, the Debian package
#                   (test/run-all), on PostgreSQL 15; PG_MAJORS="15 17 18" runs the SQL and
#                   end-to-end tests on each of those majors (17 and 18 from Debian chroots that
#                   test/lib/pgchroot builds once per machine: root only)
#   make demo       a throwaway cluster, an SMTP sink and the Processor, showing events and mail
#   make demo-ha    two pglogical nodes with a Processor each, showing adoption and leadership
#   make bench      the benchmark table of docs/benchmarks.md (not part of make check)
#   make bench-peers the same drain through graphile-worker and pg-boss (from npm), in one table,
#                   and through PgQue when PGQUE_SQL names its sql/pgque.sql (docs/benchmarks.md)
#   make deb        the Debian packages (dpkg-buildpackage -us -uc -b; they land in ..): pg-relay
#                   and a postgresql-NN-pg-relay for each PostgreSQL major of this Debian release
#   make soak       the fault soak: 10,000 events through kills, restarts, a failover and a broken
#                   mail server, with a report (minutes; not part of make check; docs/testing.md)
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (default 60) each, then a strict
#                   parse of the MIME they made, with a report (not part of make check)
#
# PG_CONFIG picks the PostgreSQL to build against (default: PostgreSQL 15 on Debian); the
# extensions go where it says. PREFIX (default /usr/local), BINDIR, MANDIR, DOCDIR, UNITDIR,
# SYSUSERSDIR and SYSCONFDIR (default /etc) place the rest; DESTDIR stages an install (packages).
# CFLAGS, CPPFLAGS and LDFLAGS reach the Processor's release build (processor/Makefile).
#
# Run as root without DESTDIR, make install also creates the system user pg_relay
# (systemd-sysusers, from the sysusers.d file) and gives /etc/pg_relay to root:pg_relay.

PG_CONFIG  ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PREFIX     ?= /usr/local
BINDIR     ?= $(PREFIX)/bin
DATADIR    ?= $(PREFIX)/share
MANDIR     ?= $(DATADIR)/man
DOCDIR     ?= $(DATADIR)/doc/pg_relay
UNITDIR    ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
SYSCONFDIR ?= /etc
CONFDIR     = $(SYSCONFDIR)/pg_relay
SERVICE_USER = pg_relay
EXTENSIONS  = extension/pg_relay extension/pg_relay_notifier
DOCS        = README.md $(wildcard docs/*.md)
# postgres_exporter queries, Prometheus alerting rules, a Grafana dashboard (docs/monitoring.md)
MONITORING  = monitoring/queries.yaml monitoring/alerts.yaml monitoring/grafana-dashboard.json

# The unit, the config file and the environment file, made for the install directories.
GENERATED   = build/pg_relay.service build/pg_relay.conf build/environment

all: processor $(GENERATED)

processor:
	$(MAKE) -C processor all

# They name the install directories, so they are made again on every run (it costs a sed).
$(GENERATED): build/%: packaging/%.in FORCE
	@mkdir -p build
	@sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' -e 's|@DOCDIR@|$(DOCDIR)|g' \
		$< >$@.tmp && mv $@.tmp $@

install: all
	for e in $(EXTENSIONS); do $(MAKE) -C $$e install PG_CONFIG=$(PG_CONFIG) || exit 1; done
	install -D -m 0755 processor/build/release/pg_relay $(DESTDIR)$(BINDIR)/pg_relay
	install -D -m 0644 docs/pg_relay.1 $(DESTDIR)$(MANDIR)/man1/pg_relay.1
	install -D -m 0644 build/pg_relay.service $(DESTDIR)$(UNITDIR)/pg_relay.service
	install -D -m 0644 packaging/pg_relay.sysusers $(DESTDIR)$(SYSUSERSDIR)/pg_relay.conf
	install -d $(DESTDIR)$(DOCDIR)
	install -m 0644 $(DOCS) $(DESTDIR)$(DOCDIR)/
	install -d $(DESTDIR)$(DOCDIR)/monitoring
	install -m 0644 $(MONITORING) $(DESTDIR)$(DOCDIR)/monitoring/
	install -d -m 0750 $(DESTDIR)$(CONFDIR) $(DESTDIR)$(CONFDIR)/secrets
	test -e $(DESTDIR)$(CONFDIR)/pg_relay.conf || \
		install -m 0640 build/pg_relay.conf $(DESTDIR)$(CONFDIR)/pg_relay.conf
	test -e $(DESTDIR)$(CONFDIR)/environment || \
		install -m 0640 build/environment $(DESTDIR)$(CONFDIR)/environment
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ]; then \
		echo "systemd-sysusers $(SYSUSERSDIR)/pg_relay.conf; chgrp $(SERVICE_USER) $(CONFDIR) ..."; \
		systemd-sysusers $(SYSUSERSDIR)/pg_relay.conf && \
		chgrp $(SERVICE_USER) $(CONFDIR) $(CONFDIR)/secrets $(CONFDIR)/pg_relay.conf $(CONFDIR)/environment; \
	fi

uninstall:
	for e in $(EXTENSIONS); do $(MAKE) -C $$e uninstall PG_CONFIG=$(PG_CONFIG) || exit 1; done
	rm -f $(DESTDIR)$(BINDIR)/pg_relay $(DESTDIR)$(MANDIR)/man1/pg_relay.1 \
		$(DESTDIR)$(UNITDIR)/pg_relay.service $(DESTDIR)$(SYSUSERSDIR)/pg_relay.conf
	rm -f $(addprefix $(DESTDIR)$(DOCDIR)/,$(notdir $(DOCS))) \
		$(addprefix $(DESTDIR)$(DOCDIR)/monitoring/,$(notdir $(MONITORING)))
	rmdir $(DESTDIR)$(DOCDIR)/monitoring $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@echo "kept $(CONFDIR) (config and secrets) and the $(SERVICE_USER) user"

PG_MAJORS ?= 15

check:
	bash packaging/install-deps
	PG_MAJORS="$(PG_MAJORS)" bash test/run-all

demo:
	bash demo/run

demo-ha:
	bash demo/ha-run

bench:
	bash bench/run

bench-peers:
	bash bench/run peers pgque

fuzz:
	$(MAKE) -C processor fuzz

soak:
	$(MAKE) -C processor all asan
	bash test/soak/run

# debian/control lists a postgresql-NN-pg-relay for each major this Debian release supports
# (debian/pgversions); pg_buildext makes it from debian/control.in first.
deb:
	pg_buildext updatecontrol
	dpkg-buildpackage -us -uc -b

format-check:
	$(MAKE) -C processor format-check

clean:
	$(MAKE) -C processor clean
	for e in $(EXTENSIONS); do $(MAKE) -C $$e clean PG_CONFIG=$(PG_CONFIG) || true; done
	rm -rf build

FORCE:

.PHONY: all processor install uninstall check demo demo-ha bench bench-peers deb fuzz soak format-check clean FORCE
