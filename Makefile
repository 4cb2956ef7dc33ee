# collsim and hwcheck: one non-recursive Makefile. `make V=1` shows commands.
#   make            build/collsim and build/hwcheck
#   make check      unit tests + CLI tests + validation guards, then again under ASan/UBSan
#   make check-gpu  hwcheck's GPU tests (needs a GPU)
#   make bench      simulator benchmarks (ratios against a reference run)
#   make fuzz       libFuzzer campaigns of every parser, FUZZ_SECONDS each (clang; docs/fuzzing.md)
#   make validate   regenerate docs/validation.md from validate/data/
#   make mutate     break the model one mechanism at a time; every break must fail a check
#   make plots      regenerate the figures of docs/plots/
#   make demo       install missing packages (as root), build, run the default job
#   make install PREFIX=...
CC ?= cc
BUILD ?= build
DEBUG ?= 0
PREFIX ?= /usr/local
DOCDIR ?= $(PREFIX)/share/doc/collsim
CUDA_HOME ?= /usr/local/cuda
# NCCL beside the toolkit, else from the distribution (/usr/include/nccl.h).
NCCL_HOME ?= $(if $(wildcard $(CUDA_HOME)/include/nccl.h),$(CUDA_HOME),/usr)
NVCC ?= $(CUDA_HOME)/bin/nvcc
NVCC_GENCODE ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_120,code=sm_120
# Open MPI for `collsim sweep` across machines: detected, or force MPI=0/1.
MPI ?= $(shell command -v mpicc >/dev/null 2>&1 && echo 1 || echo 0)

# Set-up: every goal but deps, demo (which runs deps first), clean and the
# hwcheck-only ones (build/hwcheck, check-gpu: CUDA, NCCL and libc, nothing
# else, so a bare GPU machine builds it) needs the Debian packages of
# scripts/install-deps.sh. Without them stop at once, naming them and
# `make deps`, rather than fail on a missing header later.
ifneq ($(filter-out deps demo clean $(BUILD)/hwcheck check-gpu,$(or $(MAKECMDGOALS),all)),)
DEPS_MISSING := $(shell scripts/install-deps.sh --missing)
ifneq ($(strip $(DEPS_MISSING)),)
$(error missing Debian packages: $(strip $(DEPS_MISSING)). Run `make deps` (as root: it runs apt-get install), then make again)
endif
endif

ifeq ($(V),1)
Q :=
else
Q := @
endif

WARN := -Wall -Wextra -Wshadow -Wconversion -Wmissing-prototypes -Wstrict-prototypes
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) -I. -MMD -MP
ifeq ($(DEBUG),1)
# float-cast-overflow (a double out of an integer's range) is not part of
# -fsanitize=undefined in gcc or clang; the CLI converts many doubles.
SAN := address,undefined,float-cast-overflow
OPT := -O0 -g -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=undefined,float-cast-overflow
LDSAN := -fsanitize=$(SAN)
else
OPT := -O2 -g
LDSAN :=
endif
# libxml2 (NCCL topology XML import): its headers live in a subdirectory.
XML2_CFLAGS := $(patsubst -I%,-isystem %,$(shell xml2-config --cflags 2>/dev/null || echo -I/usr/include/libxml2))
ALL_CFLAGS := $(CFLAGS_BASE) $(XML2_CFLAGS) $(OPT) $(CFLAGS)
# --help names the installed documentation (make install puts docs/ there): build
# with the PREFIX (or DOCDIR) you install with.
ALL_CFLAGS += -DCOLLSIM_DOCDIR='"$(DOCDIR)"'
# ... and, while nothing is installed there, the source tree's docs/.
ALL_CFLAGS += -DCOLLSIM_SRCDOCS='"$(CURDIR)/docs"'
# GSL, yajl and zlib from their static archives where installed (fewer shared
# libraries to map and relocate at every start); libxml2 is loaded at run time,
# only to read an XML file (sim/xmldoc.c), by its soname.
static_lib = $(or $(filter /%,$(shell $(CC) -print-file-name=lib$(1).a)),-l$(2))
LIBS := $(call static_lib,gsl,gsl) $(call static_lib,gslcblas,gslcblas) \
        $(call static_lib,yajl_s,yajl) $(call static_lib,z,z) -lm -lpthread -ldl
XML2_SONAME := $(or $(shell objdump -p $(shell $(CC) -print-file-name=libxml2.so) 2>/dev/null | awk '/SONAME/ {print $$2}'),libxml2.so.2)
ALL_CFLAGS += -DCOLLSIM_XML2_LIB='"$(XML2_SONAME)"'

# Open MPI is loaded at run time, only under a launcher (traces/sweep_mpi.c):
# its library by soname, or by path where its folder is not searched.
ifeq ($(MPI),1)
MPI_LIBDIR := $(firstword $(shell mpicc --showme:libdirs 2>/dev/null))
MPI_SONAME := $(or $(shell objdump -p $(MPI_LIBDIR)/libmpi.so 2>/dev/null | awk '/SONAME/ {print $$2}'),libmpi.so.40)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null) -DHAVE_MPI=1 \
              -DCOLLSIM_MPI_LIB='"$(if $(wildcard /lib/$(shell $(CC) -dumpmachine)/$(MPI_SONAME) /usr/lib/$(MPI_SONAME) /usr/lib64/$(MPI_SONAME)),$(MPI_SONAME),$(MPI_LIBDIR)/$(MPI_SONAME))"'
MPI_LIBS := -ldl
endif

# --- collsim: the libraries under sim/ models/ validate/ traces/ (any depth) and
# the commands under cmd/ (docs/architecture.md) --------------------------------
LIB_DIRS := sim models validate traces cmd
LIB_SRC := $(filter-out %_test.c cmd/main.c,$(sort $(shell find $(LIB_DIRS) -name '*.c')))
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/obj/%.o)
TEST_SRC := $(sort $(shell find $(LIB_DIRS) -name '*_test.c'))
TEST_BIN := $(TEST_SRC:%.c=$(BUILD)/test/%)
BENCH_BIN := $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/*.c))
# SimGrid 3.32 (Debian libsimgrid-dev) for the side-by-side benchmark only:
# built by `make bench` where installed, skipped elsewhere; never in make check.
CXX ?= c++
HAVE_SIMGRID := $(shell test -f /usr/include/simgrid/s4u.hpp && echo 1 || echo 0)
ifeq ($(HAVE_SIMGRID),1)
BENCH_BIN += $(BUILD)/bench/bench_simgrid
endif

# --- hwcheck: hwcheck/ + kernels/ + the shared sim/ pieces (no GSL) -----------
# hwcheck needs only the CUDA toolkit, NCCL, a C compiler and libc (zlib if its
# header is there): the report writer's JSON is sim/jw.c's, libc only.
HW_SHARED := sim/err.c sim/cli.c sim/report.c sim/jw.c sim/ofile.c sim/arena.c sim/line.c sim/rounds.c
HW_SRC := $(filter-out %_test.c hwcheck/main.c,$(wildcard hwcheck/*.c))
HW_OBJ := $(HW_SRC:%.c=$(BUILD)/hwobj/%.o) $(HW_SHARED:%.c=$(BUILD)/hwobj/%.o)
HW_TEST_SRC := $(wildcard hwcheck/*_test.c)
HW_TEST_BIN := $(HW_TEST_SRC:%.c=$(BUILD)/test/%)
KERN_SRC := $(wildcard kernels/*.cu)
KERN_OBJ := $(KERN_SRC:%.cu=$(BUILD)/cuobj/%.o)
HAVE_CUDA := $(shell test -x $(NVCC) && test -f $(CUDA_HOME)/include/cuda_runtime.h && echo 1 || echo 0)
HAVE_NCCL := $(shell test -f $(NCCL_HOME)/include/nccl.h && echo 1 || echo 0)
CUDA_CFLAGS := -isystem $(CUDA_HOME)/include $(if $(filter /usr,$(NCCL_HOME)),,-isystem $(NCCL_HOME)/include)
CUDA_LIBDIRS := -L$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib -L$(NCCL_HOME)/lib -L$(NCCL_HOME)/lib64
CUDA_LIBS := $(CUDA_LIBDIRS) -Wl,-rpath,$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib \
             -Wl,-rpath,$(NCCL_HOME)/lib -lnccl -lcudart -lstdc++ -lm -lpthread -ldl -lrt
# hwcheck replay reads gzipped traces through zlib when its header is there.
ifneq ($(wildcard /usr/include/zlib.h),)
CUDA_CFLAGS += -DHWCHECK_ZLIB=1
CUDA_LIBS += -lz
endif

ifeq ($(HAVE_CUDA)$(HAVE_NCCL),11)
HWCHECK := $(BUILD)/hwcheck
else
HWCHECK :=
$(info note: CUDA toolkit or NCCL not found under CUDA_HOME=$(CUDA_HOME) NCCL_HOME=$(NCCL_HOME); hwcheck is not built)
endif

.PHONY: print-unit-tests plots all check check-unit check-cli check-validate check-asan check-gpu check-fuzz-regress fuzz bench validate mutate demo install clean deps
all: $(BUILD)/collsim $(HWCHECK)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(ALL_CFLAGS) $(if $(filter traces/sweep%,$<),$(MPI_CFLAGS)) -c $< -o $@

# collsim is linked statically where glibc's static archive is installed
# (Debian libc6-dev), at a fixed address: no dynamic loader, libc or libm to
# map, relocate and bind at every start (docs/bench.md: a third of a 64-GPU
# prediction's CPU time, 36 page faults fewer). libxml2 is still loaded at
# run time (dlopen works from a static glibc program with the same glibc's
# libc.so; ld warns about that at the link). Open MPI does not survive that,
# so a static collsim under an MPI launcher runs collsim-mpi beside it: the
# same objects linked dynamically (traces/sweep_mpi.c). DEBUG=1 (ASan, which
# needs the dynamic loader) and STATIC=0 link collsim dynamically, -no-pie:
# no pointers to relocate at its start (docs/bench.md).
STATIC ?= $(if $(filter 1,$(DEBUG)),0,$(if $(filter /%,$(shell $(CC) -print-file-name=libc.a)),1,0))
ifeq ($(STATIC)$(MPI),11)
COLLSIM_MPI := $(BUILD)/collsim-mpi
else
COLLSIM_MPI :=
endif
$(BUILD)/collsim: $(BUILD)/obj/cmd/main.o $(LIB_OBJ) | $(COLLSIM_MPI)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDSAN) $(if $(filter 1,$(STATIC)),-static,-no-pie) -o $@ $^ $(LIBS) $(MPI_LIBS)

$(BUILD)/collsim-mpi: $(BUILD)/obj/cmd/main.o $(LIB_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDSAN) -no-pie -o $@ $^ $(LIBS) $(MPI_LIBS)

$(BUILD)/test/%_test: %_test.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) -lcmocka $(LIBS) $(MPI_LIBS) $(LDSAN)

$(BUILD)/bench/%: bench/%.c $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BENCH   $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ $< $(LIB_OBJ) $(LIBS) $(MPI_LIBS) $(LDSAN)

$(BUILD)/bench/bench_simgrid: bench/bench_simgrid.cpp $(LIB_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  BENCH   $@")
	$(Q)$(CXX) -std=c++17 -O2 -g -Wall -Wextra -I. -o $@ $< $(LIB_OBJ) -lsimgrid $(LIBS) $(MPI_LIBS) $(LDSAN)

# hwcheck objects are compiled separately: they see CUDA headers, not GSL.
$(BUILD)/hwobj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (hwcheck)")
	$(Q)$(CC) $(ALL_CFLAGS) $(CUDA_CFLAGS) -c $< -o $@

$(BUILD)/cuobj/%.o: %.cu
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) -std=c++17 -O3 $(NVCC_GENCODE) -I. -Xcompiler -Wall -MMD -MP -c $< -o $@

$(BUILD)/hwcheck: $(BUILD)/hwobj/hwcheck/main.o $(HW_OBJ) $(KERN_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LDSAN) -o $@ $^ $(CUDA_LIBS)

$(BUILD)/test/hwcheck/%_test: hwcheck/%_test.c $(HW_OBJ) $(KERN_OBJ)
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  TEST    $@")
	$(Q)$(CC) $(ALL_CFLAGS) $(CUDA_CFLAGS) -o $@ $^ -lcmocka $(CUDA_LIBS) $(LDSAN)

# --- tests ---------------------------------------------------------------------
check-unit: $(TEST_BIN) $(if $(HWCHECK),$(HW_TEST_BIN))
	$(Q)set -e; for t in $^; do echo "  RUN     $$t"; ./$$t >$$t.log 2>&1 || { cat $$t.log; echo "FAIL: $$t"; exit 1; }; done

# pngstat: is a plot rendered to PNG blank? (libpng; the plot tests use it)
$(BUILD)/tools/pngstat: tests/tools/pngstat.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS_BASE) $(OPT) -o $@ $< -lpng $(LDSAN)

check-cli: all $(BUILD)/tools/pngstat
	$(Q)COLLSIM=$(BUILD)/collsim HWCHECK=$(HWCHECK) PNGSTAT=$(BUILD)/tools/pngstat tests/run_cli.sh tests/cli/*.test

# Inputs the fuzzers found (tests/fuzz/TARGET/*), replayed through the harnesses.
$(BUILD)/fuzz-regress: fuzz/regress.c fuzz/harness.c $(LIB_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(ALL_CFLAGS) -o $@ fuzz/regress.c fuzz/harness.c $(LIB_OBJ) $(LIBS) $(MPI_LIBS) $(LDSAN)

check-fuzz-regress: $(BUILD)/fuzz-regress
	$(Q)./$(BUILD)/fuzz-regress tests/fuzz

# --- fuzzing (not part of check): clang's libFuzzer with ASan/UBSan ----------
#   make fuzz FUZZ_SECONDS=60 FUZZ_TARGETS="trace topo"   (docs/fuzzing.md)
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 10
FUZZ_TARGETS ?= kineto kineto-gz trace trace-gz topo xml smi calib scenario meas grid
FUZZ_SAN := -fsanitize=address,undefined,float-cast-overflow -fno-sanitize-recover=undefined,float-cast-overflow
FUZZ_CFLAGS := $(CFLAGS_BASE) -Wno-sign-conversion $(XML2_CFLAGS) -O1 -g -fno-omit-frame-pointer $(FUZZ_SAN)
FUZZ_OBJ := $(LIB_SRC:%.c=$(BUILD)/fuzz/obj/%.o) $(BUILD)/fuzz/obj/fuzz/harness.o
.SECONDARY: $(FUZZ_OBJ)

$(BUILD)/fuzz/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@$(if $(Q),echo "  CC      $< (fuzz)")
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $< -o $@

$(BUILD)/fuzz/fuzz-%: fuzz/libfuzzer.c $(FUZZ_OBJ)
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(FUZZ_CC) $(filter-out -MMD -MP,$(FUZZ_CFLAGS)) -fsanitize=fuzzer -DFUZZ_TARGET='"$*"' -o $@ $(filter %.c %.o,$^) $(LIBS)

fuzz: $(addprefix $(BUILD)/fuzz/fuzz-,$(FUZZ_TARGETS))
	$(Q)scripts/fuzz.sh $(BUILD)/fuzz $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The validation sets' regression guards (validate/data/*/*.guards, docs/validation.md), run into build/validate.
check-validate: $(BUILD)/collsim
	$(Q)scripts/validate.sh $(BUILD)/collsim --check

check-asan:
	$(Q)$(MAKE) --no-print-directory BUILD=build/asan DEBUG=1 check-unit check-cli check-fuzz-regress

check: all
	$(Q)$(MAKE) --no-print-directory check-unit check-cli check-validate check-fuzz-regress
	$(Q)$(MAKE) --no-print-directory check-asan
	@echo "make check: all tests passed"

check-gpu: $(HWCHECK)
	$(Q)scripts/check-gpu.sh $(BUILD)/hwcheck

bench: $(BUILD)/collsim $(BENCH_BIN)
	$(Q)$(if $(filter 0,$(HAVE_SIMGRID)),rm -f $(BUILD)/bench/bench_simgrid; echo "note: SimGrid not installed (Debian libsimgrid-dev): bench_simgrid skipped";) scripts/bench.sh $(BUILD)

validate: $(BUILD)/collsim
	$(Q)scripts/validate.sh $(BUILD)/collsim

# The collsim unit tests check-unit runs (hwcheck's aside), for scripts/mutate.sh.
print-unit-tests:
	@echo $(TEST_BIN)

# Single-point mutations of the model in a scratch copy (scripts/mutate.sh);
# writes the table into docs/validation.md. Not part of check (minutes).
mutate:
	$(Q)scripts/mutate.sh --doc

plots: $(BUILD)/collsim
	$(Q)scripts/plots.sh $(BUILD)/collsim

deps:
	$(Q)scripts/install-deps.sh

demo: deps
	$(Q)$(MAKE) --no-print-directory all
	$(Q)scripts/demo.sh $(BUILD)/collsim

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(DOCDIR)/validation
	install -m 755 $(BUILD)/collsim $(COLLSIM_MPI) $(HWCHECK) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 docs/man/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	install -m 644 $(addprefix docs/,$(sort $(shell grep -o 'validation/[A-Za-z0-9_.-]*\.svg' docs/validation.md))) $(DESTDIR)$(DOCDIR)/validation/
	install -d $(DESTDIR)$(DOCDIR)/plots
	install -m 644 docs/plots/*.png $(DESTDIR)$(DOCDIR)/plots/

clean:
	rm -rf build

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
