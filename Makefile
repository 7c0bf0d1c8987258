# vlplan -- build, test, benchmark.  `make help` lists the targets.
#
# Release build in build/, sanitizer (ASan+UBSan) build in build/san/.  Sources are
# globbed: a new lib/ unit, strategy or test file needs no edit here.

CC      ?= cc
BUILD   ?= build
SAN     ?= 0
VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)

PKGS     := yaml-0.1 jansson libzstd
WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wformat=2 -Wvla
# lib/ is grouped by module (util, io, config, data, pack, plan, model, check, run: the
# layers of docs/ARCHITECTURE.md) under its face, lib/vlplan.h; lib/, every module folder
# and every strategy folder are on the include path, so headers are named alone.
LIB_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard lib/*/*.h))))
PLAN_DIRS := $(sort $(patsubst %/,%,$(dir $(wildcard plans/*/*.h))))
CPPFLAGS := $(addprefix -I,lib $(LIB_DIRS) $(PLAN_DIRS) plans) -D_POSIX_C_SOURCE=200809L \
            -DVLPLAN_VERSION='"$(VERSION)"'
OPT      := -O2 -g -ffp-contract=off
ifeq ($(SAN),1)
OPT      := -O1 -g -fno-omit-frame-pointer -ffp-contract=off \
            -fsanitize=address,undefined -fno-sanitize-recover=all
endif
# Quiet build lines ("CC lib/x.c"); `make V=1` prints the full commands.  Warnings
# are shown either way.
ifeq ($(V),1)
Q :=
say = @:
else
Q := @
say = @printf '  %-5s %s\n' $(1) $(2)
endif
CFLAGS   := -std=c11 -pthread $(WARN) $(OPT) $(EXTRA_CFLAGS)
LDFLAGS  := $(filter -fsanitize%,$(OPT)) $(EXTRA_LDFLAGS)
PKG_LIBS  = $(shell pkg-config --libs $(PKGS))
LDLIBS    = $(PKG_LIBS) -lglpk -lm -pthread
TEST_LIBS = $(shell pkg-config --libs criterion)

LIB_SRC  := $(sort $(wildcard lib/*/*.c plans/*.c plans/*/*.c))
CMD_SRC  := $(sort $(wildcard cmd/vlplan/*.c))
TEST_SRC := $(sort $(wildcard tests/*/test_*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
CMD_OBJ  := $(CMD_SRC:%.c=$(BUILD)/obj/%.o)
TEST_OBJ := $(TEST_SRC:%.c=$(BUILD)/obj/%.o) $(BUILD)/obj/tests/testutil.o
DEPFILES := $(LIB_OBJ:.o=.d) $(CMD_OBJ:.o=.d) $(TEST_OBJ:.o=.d)

.PHONY: all deps deps-test deps-clang deps-lint demo test test-release test-cmake test-clang test-clang-san fault-all bench results lint \
        man-lint clean help fmt fmt-check golden schema fuzz fuzz-smoke

all: $(BUILD)/vlplan $(BUILD)/libvlplan.a man/vlplan.1

# The strategy list and parameters come from the registry, so the page needs the binary.
man/vlplan.1: man/vlplan.1.in $(wildcard man/*.mdoc) tools/mkman.sh $(BUILD)/vlplan
	$(call say,MAN,$@)
	$(Q)VLPLAN=$(BUILD)/vlplan sh tools/mkman.sh

help:
	@echo "make            build build/vlplan and build/libvlplan.a"
	@echo "make deps       install the missing build packages (tools/deps.sh build; test targets add theirs)"
	@echo "make V=1        print full compiler commands (default: one short line a file)"
	@echo "make demo       deps + build + plan the bundled manifest, print metrics, compare strategies"
	@echo "make test       ASan+UBSan build, full Criterion suite, leaks fail it"
	@echo "make test-release  the suite on the optimised build"
	@echo "make test-clang warnings-as-errors build with clang"
	@echo "make test-cmake the CMake build and its ctest run (CI runs it too)"
	@echo "make test-clang-san  the suite built by clang with ASan+UBSan (CI runs both)"
	@echo "make fault-all  fault injection at every allocation, not 40 per command (slow)"
	@echo "make bench      benchmarks (bench/run.sh), component by component"
	@echo "make results    regenerate bench/RESULTS.md, the current figures (bench/results.py)"
	@echo "make lint       mandoc -Tlint on the man page, the layer check (tools/layers.py)"
	@echo "make golden     rewrite testdata/golden/*.jsonl after an intended plan change"
	@echo "make schema     rewrite python/vlplan/plan_schema.json (vlplan schema) after a change"
	@echo "                to the plan field table (lib/plan/planio_fields.c)"
	@echo "make fuzz       run every fuzz/fuzz_*.c harness FUZZ_TIME seconds (default 60),"
	@echo "                then tools/diff_readers.py (C against Python reader) as long"
	@echo "make fuzz-smoke replay every corpus, then FUZZ_TIME=10 seconds each (CI)"
	@echo "make soak       SOAK_CASES (10000) random plan-then-verify cases; failing seeds printed"

# Each target installs only what it needs (tools/deps.sh GROUP): the build and the demo
# never pull in the test tools.
deps:
	@sh tools/deps.sh build
deps-test:
	@sh tools/deps.sh build test browser
deps-clang:
	@sh tools/deps.sh build test clang browser
deps-lint:
	@sh tools/deps.sh build lint

$(BUILD)/obj/%.o: %.c | deps
	@mkdir -p $(dir $@)
	$(call say,CC,$<)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -MMD -MP -c $< -o $@

# the test files need Criterion's headers: the test tools come with them
$(TEST_OBJ): | deps-test

$(BUILD)/libvlplan.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(call say,AR,$@)
	$(Q)rm -f $@
	$(Q)ar rcs $@ $^

# The sanitizer builds are the test builds: their vlplan also takes faults to inject
# (tests/fault_inject.c: VLPLAN_FAULT=malloc:N, write:N, fsync:N or rename:N).
ifeq ($(SAN),1)
FAULT_OBJ := $(BUILD)/obj/tests/fault_inject.o
FAULT_LD  := -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=posix_memalign \
             -Wl,--wrap=strdup,--wrap=strndup \
             -Wl,--wrap=write,--wrap=fsync,--wrap=rename
endif

$(BUILD)/vlplan: $(CMD_OBJ) $(FAULT_OBJ) $(BUILD)/libvlplan.a
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) $(FAULT_LD) -o $@ $(CMD_OBJ) $(FAULT_OBJ) $(BUILD)/libvlplan.a $(LDLIBS)

# All test files in one Criterion binary, so the suite ends with one Synthesis line.
$(BUILD)/tests/vlplan_tests: $(TEST_OBJ) $(BUILD)/libvlplan.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $(TEST_OBJ) $(BUILD)/libvlplan.a $(LDLIBS) $(TEST_LIBS)

# Tests lie in tests/<module>/ and share tests/'s fixtures and testutil.
$(TEST_OBJ): CPPFLAGS += -Itests

# One binary per test file, for working on one unit: make build/tests/test_pack
.SECONDEXPANSION:
$(BUILD)/tests/test_%: $$(addprefix $(BUILD)/obj/,$$(addsuffix .o,$$(basename \
                           $$(wildcard tests/*/test_$$*.c)))) \
                       $(BUILD)/obj/tests/testutil.o $(BUILD)/libvlplan.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(TEST_LIBS)

# The suite under ASan+UBSan, built by $(1) in $(2).  Criterion reports a leak in a
# worker as a pass, so sanitizer reports go to files and any file fails the run
# (docs/reliability.md §2.6).  The CLI tests run $(2)/vlplan, whose leaks change its exit
# status, and which takes faults to inject (tests/robust/test_faults.c).  gcc's UBSan misses
# what clang's finds (NULL + 0, qsort(NULL, 0)): CI runs both.  No test sets a Criterion
# .timeout: under LeakSanitizer its timeout queue leaked an entry now and then (a report
# with no frame of ours); SUITE_LIMIT bounds a hung suite instead.
SUITE_LIMIT ?= 2400
define san_suite
	@$(MAKE) --no-print-directory CC=$(1) BUILD=$(2) SAN=1 $(2)/vlplan $(2)/tests/vlplan_tests
	@rm -rf $(2)/logs && mkdir -p $(2)/logs
	@ASAN_OPTIONS=detect_leaks=1:log_path=$(CURDIR)/$(2)/logs/asan \
	 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=$(CURDIR)/$(2)/logs/ubsan \
	 VLPLAN_BIN=$(CURDIR)/$(2)/vlplan $(3) \
	 timeout -k 30 $(SUITE_LIMIT) $(2)/tests/vlplan_tests --jobs 2 $(4); rc=$$?; \
	 if ls $(2)/logs/* >/dev/null 2>&1; then \
	   cat $(2)/logs/*; echo "sanitizer reports found (see above)" >&2; exit 1; fi; \
	 exit $$rc
endef

test: deps-test
	$(call san_suite,$(CC),build/san)

test-clang-san: deps-clang
	$(call san_suite,clang,build/clangsan)

fault-all: deps-clang
	$(call san_suite,clang,build/clangsan,VLPLAN_FAULT_POINTS=all,--filter 'faults/*')

test-release: deps-test
	@$(MAKE) --no-print-directory $(BUILD)/vlplan $(BUILD)/tests/vlplan_tests
	VLPLAN_BIN=$(CURDIR)/$(BUILD)/vlplan $(BUILD)/tests/vlplan_tests --jobs 2

# The CMake build (CMakeLists.txt) of the same sources, and its ctest run.
test-cmake: deps-test
	@sh tools/deps.sh cmake
	@cmake -S . -B build/cmake -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build build/cmake -j2 -- --no-print-directory >/dev/null
	@ctest --test-dir build/cmake --output-on-failure

test-clang: deps-clang
	@$(MAKE) --no-print-directory CC=clang BUILD=build/clang build/clang/vlplan build/clang/tests/vlplan_tests

demo: $(BUILD)/vlplan
	$(BUILD)/vlplan plan -s pack -o $(BUILD)/demo-plan.jsonl --metrics $(BUILD)/demo-metrics.json testdata/demo.jsonl
	$(BUILD)/vlplan verify $(BUILD)/demo-plan.jsonl testdata/demo.jsonl
	$(BUILD)/vlplan metrics $(BUILD)/demo-plan.jsonl
	$(BUILD)/vlplan compare -q -s pack,hbp,chunkflow,skrull,sorted \
	    --row packb=pack:pack.scope=batch --html $(BUILD)/demo-report.html testdata/demo.jsonl
	@echo "demo: the comparison's HTML report is $(BUILD)/demo-report.html"

# bench/bench_util.c is the benchmarks' shared code, linked into each, not one of them.
BENCHES := $(patsubst bench/%.c,$(BUILD)/bench/%,$(filter-out bench/bench_util.c,$(wildcard bench/bench_*.c)))
BENCH_UTIL := $(BUILD)/obj/bench/bench_util.o

bench: $(BUILD)/vlplan $(BENCHES)
	BUILD=$(BUILD) sh bench/run.sh

# The current figures: every row's command is in the file it writes.
results: $(BUILD)/vlplan
	VLPLAN=$(BUILD)/vlplan python3 bench/results.py $(RESULTS_FLAGS)

$(BUILD)/bench/bench_%: $(BUILD)/obj/bench/bench_%.o $(BENCH_UTIL) $(BUILD)/libvlplan.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

lint man-lint: man/vlplan.1 fmt-check | deps-lint
	mandoc -Tlint -W warning man/vlplan.1
	@python3 tools/layers.py
	@! grep -rn -- '\.timeout *=' tests/ || \
	  { echo "a Criterion .timeout (see san_suite above): bound the suite, not a test" >&2; exit 1; }

# Regenerate the golden plans (tests/plan/test_golden.c) after an intended change.
golden: $(BUILD)/vlplan
	VLPLAN=$(BUILD)/vlplan sh tools/golden.sh

# The plan schema the Python reader checks against, from the C field table (vlplan schema;
# python/tests/test_schema.py fails while the copy is stale).
schema: $(BUILD)/vlplan
	$(BUILD)/vlplan schema --format json > python/vlplan/plan_schema.json

# libFuzzer harnesses (clang, ASan + UBSan): fuzz/fuzz_NAME.c -> build/fuzz/NAME, its
# corpus fuzz/corpus/NAME/, crash inputs kept as regression files in fuzz/regressions/NAME/
# (replayed by fuzz-smoke), its dictionary fuzz/NAME.dict when there is one.
FUZZ_TIME ?= 60
FUZZ_OPT  := -O1 -g -fno-omit-frame-pointer -ffp-contract=off \
             -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
FUZZERS   := $(patsubst fuzz/fuzz_%.c,build/fuzz/%,$(wildcard fuzz/fuzz_*.c))

# the library built by clang with coverage for libFuzzer, in its own build directory
.PHONY: fuzz-lib
fuzz-lib: | deps-clang
	@$(MAKE) --no-print-directory CC=clang BUILD=build/fuzzlib OPT="$(FUZZ_OPT)" \
	    build/fuzzlib/libvlplan.a

build/fuzz/%: fuzz/fuzz_%.c fuzz-lib
	@mkdir -p build/fuzz
	@clang $(CPPFLAGS) -Itests -std=c11 -pthread -O1 -g -fsanitize=fuzzer,address,undefined \
	    -fno-sanitize-recover=all -o $@ $< build/fuzzlib/libvlplan.a $(LDLIBS)

# Bounded memory on any input (issue 28): a run that holds more than this, or asks for
# one allocation above the second, fails as a crash would.
FUZZ_LIMITS ?= -rss_limit_mb=1024 -malloc_limit_mb=512

fuzz: $(FUZZERS) $(BUILD)/vlplan
	@for f in $(FUZZERS); do n=$${f##*/}; d=; [ -f fuzz/$$n.dict ] && d=-dict=fuzz/$$n.dict; \
	  echo "fuzz: $$n for $(FUZZ_TIME) s"; mkdir -p fuzz/corpus/$$n; \
	  mkdir -p fuzz/regressions/$$n; \
	  $$f $$d $(FUZZ_LIMITS) -max_total_time=$(FUZZ_TIME) -artifact_prefix=fuzz/regressions/$$n/crash- \
	      -print_final_stats=1 fuzz/corpus/$$n 2>&1 | grep -E "^(stat::number_of_executed_units|==|SUMMARY)" \
	      || exit 1; done
	@echo "fuzz: diff_readers (the C and Python plan readers) for $(FUZZ_TIME) s"
	@mkdir -p build/fuzz/diff_readers
	@python3 tools/diff_readers.py --seconds $(FUZZ_TIME) --seed $${FUZZ_SEED:-28} \
	    --vlplan $(BUILD)/vlplan --keep build/fuzz/diff_readers

fuzz-smoke: $(FUZZERS)
	@for f in $(FUZZERS); do n=$${f##*/}; d=; [ -f fuzz/$$n.dict ] && d=-dict=fuzz/$$n.dict; \
	  r=; [ -d fuzz/regressions/$$n ] && r=fuzz/regressions/$$n; \
	  $$f $(FUZZ_LIMITS) -runs=0 fuzz/corpus/$$n $$r >/dev/null 2>&1 || { echo "fuzz: $$n replay failed"; \
	    $$f $(FUZZ_LIMITS) -runs=0 fuzz/corpus/$$n $$r 2>&1 | tail -30; exit 1; }; \
	  mkdir -p build/fuzz/new-$$n; \
	  $$f $$d $(FUZZ_LIMITS) -max_total_time=$${FUZZ_SMOKE_TIME:-10} -print_final_stats=1 \
	      build/fuzz/new-$$n fuzz/corpus/$$n \
	      >build/fuzz/$$n.log 2>&1 || { tail -30 build/fuzz/$$n.log; exit 1; }; \
	  echo "fuzz: $$n corpus replayed, $$(grep -o 'stat::number_of_executed_units: [0-9]*' \
	      build/fuzz/$$n.log | grep -o '[0-9]*$$' || echo '?') more runs clean"; done

# The sources .clang-format owns: not tests/ (their argv arrays keep the command line's
# layout, see .clang-format) nor the generated tables (tools/gen_tables.py).
FMT_SRC = $(filter-out lib/data/gen_tables.c,$(wildcard lib/*.h lib/*/*.[ch] plans/*.[ch] \
            plans/*/*.[ch] cmd/vlplan/*.[ch] bench/*.[ch] fuzz/*.c tools/*.c))

fmt: | deps-lint
	clang-format -i $(FMT_SRC)

# What `make lint` (and so CI) checks: `make fmt` would change nothing.
fmt-check: | deps-lint
	@clang-format --dry-run -Werror $(FMT_SRC) || \
	  { echo "fmt-check: run 'make fmt' (clang-format 14, .clang-format)" >&2; exit 1; }

clean:
	rm -rf build

-include $(DEPFILES) $(wildcard $(BUILD)/obj/bench/*.d)

# The property loop (tests/plan_prop.h): SOAK_CASES random cases, plan and verify must
# agree; failing seeds are printed.  `make soak SOAK_CASES=200 SOAK_SEED=1` for a quick one.
SOAK_CASES ?= 10000
SOAK_SEED  ?= 1000000
.PHONY: soak
$(BUILD)/tools/soak: $(BUILD)/obj/tools/soak.o $(BUILD)/libvlplan.a
	@mkdir -p $(dir $@)
	$(call say,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/tools/soak.o: CPPFLAGS += -Itests
-include $(BUILD)/obj/tools/soak.d

soak: $(BUILD)/tools/soak
	nice -n 10 $(BUILD)/tools/soak -n $(SOAK_CASES) -s $(SOAK_SEED)
