# PGXS build of the stoatflow extension (C++17): the PostgreSQL layer (src/pg) and the pure core
# (src/core) linked into one stoatflow.so; `make installcheck` runs the pg_regress suite.

EXTENSION = stoatflow
EXTVERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" stoatflow.control)
MODULE_big = stoatflow
# Install scripts live in sql/ beside the pg_regress tests; the stoatflow--* prefix keeps them
# apart (test/check_schedule.sh ignores them).
DATA = $(sort $(wildcard sql/stoatflow--*.sql) sql/stoatflow--$(EXTVERSION).sql)

PG_SRCS = $(wildcard src/pg/*.cpp src/pg/declare/*.cpp)
CORE_SRCS = $(wildcard src/core/*.cpp)
# The Kafka layer linked into the extension (the mock broker is a program of its own).
KAFKA_SRCS = src/kafka/json_decoder.cpp src/kafka/consumer.cpp src/kafka/options.cpp \
	src/kafka/row_extractor.cpp src/kafka/raw_row.cpp src/kafka/fast_convert.cpp \
	src/kafka/topics.cpp
OBJS = $(PG_SRCS:.cpp=.o) $(CORE_SRCS:.cpp=.o) $(KAFKA_SRCS:.cpp=.o)

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
PG_INCLUDEDIR_INTERNAL := $(shell $(PG_CONFIG) --pkgincludedir)/internal

# -isystem: PostgreSQL's headers are not ours to keep warning-free under -Wextra -Werror
# (an -isystem directory wins over the -I that PGXS adds for the same path).
PG_CPPFLAGS = -Iinclude -isystem $(PG_INCLUDEDIR_SERVER) -isystem $(PG_INCLUDEDIR_INTERNAL) \
	-DSTOATFLOW_VERSION='"$(EXTVERSION)"'
PG_CXXFLAGS = -std=c++17 -Wall -Wextra -Werror -Wno-register -fPIC -MMD -MP
SHLIB_LINK = -lstdc++ -lrdkafka -lsimdjson

# The core is compiled without any PostgreSQL include directory: a core file that reaches for
# postgres.h fails to build here, not just in review.
CORE_CPPFLAGS = -Iinclude -D_GNU_SOURCE
src/core/%.o: override CPPFLAGS = $(CORE_CPPFLAGS)
src/kafka/%.o: override CPPFLAGS = $(CORE_CPPFLAGS)
# The record path — the only object the worker's consume thread touches — is built the same
# way: PostgreSQL stays out of the thread because it is out of reach of the compiler.
src/pg/record_path.o src/pg/record_path_rows.o src/pg/key_text.o: override CPPFLAGS = $(CORE_CPPFLAGS)

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
