# extension/common.mk - what both extensions' Makefiles share: PGXS, and checkver.

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# checkver: the control file's default_version must have a base script.
checkver:
	@v=$$(sed -n "s/^default_version *= *'\(.*\)'/\1/p" $(EXTENSION).control); \
	test -f $(EXTENSION)--$$v.sql || { echo "no $(EXTENSION)--$$v.sql for default_version $$v"; exit 1; }
.PHONY: checkver
