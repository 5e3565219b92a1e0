# extension/common.mk - what both extensions' Makefiles share: the scripts built from src/, PGXS,
# and checkver.
#
# An extension's Makefile sets, before including this file:
#   EXTENSION        its name
#   EXT_VERSION      the version being built (the control file's default_version)
#   RELEASED         earlier released versions: their base scripts released/EXT--V.sql are kept as
#                    they were released (installable for tests), and each gets an upgrade script
#                    to EXT_VERSION
#   SECTIONS         src/*.sql in install order
#   SCHEMA_SECTIONS  the sections only a base install runs (tables); upgrades change the schema
#                    through upgrade/A--B.sql instead, then run every other section again

EXT_CODE_SECTIONS   = $(filter-out $(SCHEMA_SECTIONS),$(SECTIONS))
EXT_INSTALL_SCRIPT  = $(EXTENSION)--$(EXT_VERSION).sql
EXT_UPGRADE_SCRIPTS = $(foreach v,$(RELEASED),$(EXTENSION)--$(v)--$(EXT_VERSION).sql)
DATA            = $(foreach v,$(RELEASED),released/$(EXTENSION)--$(v).sql)
DATA_built      = $(EXT_INSTALL_SCRIPT) $(EXT_UPGRADE_SCRIPTS)
MKSCRIPT        = ../mkscript

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

$(EXT_INSTALL_SCRIPT): $(SECTIONS:%=src/%.sql) $(MKSCRIPT)
	$(MKSCRIPT) install $(EXTENSION) $(EXT_VERSION) $(SECTIONS:%=src/%.sql) >$@.tmp && mv $@.tmp $@

$(EXTENSION)--%--$(EXT_VERSION).sql: $(wildcard upgrade/*.sql) $(EXT_CODE_SECTIONS:%=src/%.sql) $(MKSCRIPT)
	$(MKSCRIPT) upgrade $(EXTENSION) $* $(EXT_VERSION) $(EXT_CODE_SECTIONS:%=src/%.sql) >$@.tmp && mv $@.tmp $@

# checkver: the control file's default_version is the version built here, every released version
# still has its base script, and an upgrade script to this version can be made from each.
checkver: $(DATA_built)
	@v=$$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control); \
	test "$$v" = "$(EXT_VERSION)" || { echo "$(EXTENSION).control: default_version $$v, Makefile EXT_VERSION $(EXT_VERSION)"; exit 1; }; \
	for r in $(RELEASED); do \
		test -f released/$(EXTENSION)--$$r.sql || { echo "released script released/$(EXTENSION)--$$r.sql is missing"; exit 1; }; \
	done
.PHONY: checkver
