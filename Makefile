# autocdc — PGXS build
MODULE_big = autocdc
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
EXTENSION = autocdc
# every released version's script stays, with the upgrade scripts from it
DATA = autocdc--0.1.sql autocdc--0.1--0.2.sql autocdc--0.2.sql autocdc--0.2--0.3.sql autocdc--0.3.sql
PGFILEDESC = "autocdc - declarative CDC flows for PostgreSQL"

REGRESS = setup examples scd1 scd2 errors runtime statements changes lifecycle snapshot snapshot_query snapshot_mix security bitemporal asof bulk source_ddl schedule expectations partitioned
REGRESS_OPTS = --temp-config=$(srcdir)/test/regress.conf
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

# the library knows which catalog version it was built for (autocdc.control)
AUTOCDC_VERSION := $(shell sed -n "s/^default_version = '\(.*\)'/\1/p" $(dir $(firstword $(MAKEFILE_LIST)))autocdc.control)
PG_CPPFLAGS = -I$(srcdir)/src -DAUTOCDC_VERSION='"$(AUTOCDC_VERSION)"'
# PGXS's own CFLAGS (optimisation, -fwrapv...) stay; ours are added to them
PG_CFLAGS = -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# the TAP tests' shared helpers (test/t/AutocdcTest.pm)
PG_PROVE_FLAGS += -I $(srcdir)/test/t

# every object depends on the shared headers
$(OBJS): $(wildcard $(dir $(firstword $(MAKEFILE_LIST)))src/*.h)
# the library version comes from the control file
src/autocdc.o src/worker.o: autocdc.control

# the PGXN release archive, autocdc-<version>.zip: the committed files of
# HEAD under autocdc-<version>/ (the version is META.json's)
DIST_VERSION = $(shell sed -n 's/^   "version": "\(.*\)",$$/\1/p' $(srcdir)/META.json)
dist:
	git -C $(srcdir) archive --format zip --prefix=$(EXTENSION)-$(DIST_VERSION)/ \
		-o $(abspath $(EXTENSION)-$(DIST_VERSION).zip) HEAD
.PHONY: dist
