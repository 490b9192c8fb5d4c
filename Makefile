# PGXS build of the stoatflow extension (C++17): the PostgreSQL layer (src/pg) and the pure rooms
# (src/core, src/format, src/kafka, src/flow) in one stoatflow.so; `make installcheck` runs pg_regress.

EXTENSION = stoatflow
EXTVERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" stoatflow.control)
MODULE_big = stoatflow
# Install scripts live in sql/ beside the pg_regress tests; the stoatflow--* prefix keeps them
# apart (test/check_schedule.sh ignores them).
DATA = $(sort $(wildcard sql/stoatflow--*.sql))

# The rooms of the house (src/README.md): the pure ones never see a PostgreSQL header.
PURE_ROOMS = core format kafka flow registry
room_srcs = $(wildcard src/$(1)/*.cpp src/$(1)/*/*.cpp src/$(1)/*/*/*.cpp)
# The mock broker is a program of its own (CMakeLists.txt), not part of the extension.
PURE_SRCS = $(filter-out src/kafka/mock_broker.cpp,$(foreach r,$(PURE_ROOMS),$(call room_srcs,$(r))))
PG_SRCS = $(call room_srcs,pg)
OBJS = $(PG_SRCS:.cpp=.o) $(PURE_SRCS:.cpp=.o)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
PG_INCLUDEDIR_INTERNAL := $(shell $(PG_CONFIG) --pkgincludedir)/internal

# -isystem: PostgreSQL's headers are not ours to keep warning-free under -Wextra -Werror
# (an -isystem directory wins over the -I that PGXS adds for the same path).
PG_CPPFLAGS = -Iinclude -isystem $(PG_INCLUDEDIR_SERVER) -isystem $(PG_INCLUDEDIR_INTERNAL) \
	-DSTOATFLOW_VERSION='"$(EXTVERSION)"'
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-register -fPIC -MMD -MP
SHLIB_LINK = -lstdc++ -lrdkafka -lsimdjson -lcurl

# The pure rooms are compiled without any PostgreSQL include directory: a file there that reaches
# for postgres.h fails to build here, not just in review (test/check_purity.sh says the same in
# review). The record path in src/flow is what the worker's consume thread runs: PostgreSQL stays
# out of that thread because it is out of reach of the compiler.
PURE_CPPFLAGS = -Iinclude -D_GNU_SOURCE
$(PURE_SRCS:.cpp=.o): override CPPFLAGS = $(PURE_CPPFLAGS)

# PGXS would also emit LLVM bitcode for JIT inlining, with clang and C flags; not worth it for C++.
override with_llvm = no

EXTRA_CLEAN = $(OBJS:.o=.d) results/ log/ tmp_check/ regression.diffs regression.out

include $(PGXS)

-include $(OBJS:.o=.d)

$(OBJS): stoatflow.control


.PHONY: installcheck regress check-schedule
# Runs pg_regress in a throwaway --temp-instance against the *installed* extension (make install
# first). As root, pg_regress itself runs as user postgres.
installcheck: regress
regress:
	PG_CONFIG='$(PG_CONFIG)' bash test/pg_regress.sh

check-schedule:
	bash test/check_schedule.sh

.PHONY: demo test
# The main job in one command: build, throwaway PostgreSQL + mock Kafka, sample events, results.
demo:
	bash demo/run.sh

# Every test: core unit tests (+ sanitizers in CI), pg_regress, process-level tests, against the
# mock and Apache Kafka; installs the Debian packages it needs first.
test:
	bash test/install_deps.sh
	STOATFLOW_TEST_BROKERS="$${STOATFLOW_TEST_BROKERS:-mock kafka}" bash test/run_all.sh
