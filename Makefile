# autocdc — PGXS build
MODULE_big = autocdc
OBJS = $(patsubst %.c,%.o,$(sort $(wildcard src/*.c)))
EXTENSION = autocdc
DATA = autocdc--0.1.sql
PGFILEDESC = "autocdc - declarative CDC flows for PostgreSQL"

REGRESS = setup examples scd1 scd2 errors runtime statements lifecycle snapshot
REGRESS_OPTS = --temp-config=$(srcdir)/test/regress.conf
TAP_TESTS = 1
PROVE_TESTS = test/t/*.pl

PG_CPPFLAGS = -I$(srcdir)/src
override CFLAGS += -Wall -Wextra -Wno-unused-parameter

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# the TAP tests' shared helpers (test/t/AutocdcTest.pm)
PG_PROVE_FLAGS += -I $(srcdir)/test/t

# every object depends on the shared headers
$(OBJS): src/autocdc.h src/compat.h
