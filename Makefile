# pg_relay - top-level Makefile.
#
#   make            build the Processor (processor/build/release/pg_relay)
#   make install    install both extensions (PGXS) and the Processor, its systemd unit and config
#   make check      every test on throwaway clusters: C unit tests, SQL regression and isolation
#                   tests, end-to-end tests with real PostgreSQL, SMTP and TLS (test/run-all)
#   make demo       a throwaway cluster, an SMTP sink and the Processor, showing events and mail
#   make bench      the benchmark table of docs/benchmarks.md (not part of make check)
#   make soak       the fault soak: 10,000 events through kills, restarts, a failover and a broken
#                   mail server, with a report (minutes; not part of make check; docs/testing.md)
#   make fuzz       every libFuzzer target for FUZZ_SECONDS (default 60) each, then a strict
#                   parse of the MIME they made, with a report (not part of make check)
#
# PG_CONFIG picks the PostgreSQL to build against (default: PostgreSQL 15 on Debian).

PG_CONFIG ?= $(firstword $(wildcard /usr/lib/postgresql/15/bin/pg_config) pg_config)
PREFIX    ?= /usr/local
BINDIR    ?= $(PREFIX)/bin
SYSCONFDIR ?= /etc
UNITDIR   ?= /lib/systemd/system
EXTENSIONS = extension/pg_relay extension/pg_relay_notifier

all:
	$(MAKE) -C processor all

install: all
	for e in $(EXTENSIONS); do $(MAKE) -C $$e install PG_CONFIG=$(PG_CONFIG) || exit 1; done
	install -D -m 0755 processor/build/release/pg_relay $(DESTDIR)$(BINDIR)/pg_relay
	install -D -m 0644 packaging/pg_relay.service $(DESTDIR)$(UNITDIR)/pg_relay.service
	test -e $(DESTDIR)$(SYSCONFDIR)/pg_relay/pg_relay.conf || \
		install -D -m 0640 packaging/pg_relay.conf $(DESTDIR)$(SYSCONFDIR)/pg_relay/pg_relay.conf

check:
	bash packaging/install-deps
	bash test/run-all

demo:
	bash demo/run

bench:
	bash bench/run

fuzz:
	$(MAKE) -C processor fuzz

soak:
	$(MAKE) -C processor all asan
	bash test/soak/run

format-check:
	$(MAKE) -C processor format-check

clean:
	$(MAKE) -C processor clean
	for e in $(EXTENSIONS); do $(MAKE) -C $$e clean PG_CONFIG=$(PG_CONFIG) || true; done

.PHONY: all install check demo bench fuzz soak format-check clean
