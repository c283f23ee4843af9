# longctx build. `make` builds the library and the CLI; `make test` runs the test suite on one build
# variant; `make check` runs it on the variants release, minimal (neither OpenBLAS nor OpenMP) and asan
# (ASan+UBSan), as CI does.
#   VARIANT=release|noblas|noomp|minimal|asan   (build/$(VARIANT)/; minimal = noblas + noomp)
#   BLAS=auto|openblas|builtin          auto: OpenBLAS when its header and library are present
#   BARE=1   build as a bare machine (gcc and make only) would, whatever is installed: the built-in gemm, no
#            zlib, no MPI, and the Python tests skipped (build/$(VARIANT)-bare/; make check's asan variant)
CC ?= gcc
VARIANT ?= release
# VARIANT=fuzz (make fuzz): clang with libFuzzer's coverage, ASan and UBSan; the built-in kernels, no OpenMP, no MPI
ifeq ($(VARIANT),fuzz)
  CC := clang
  BLAS := builtin
  MPI := 0
endif
BLAS ?= auto
ARCH ?= native
BARE ?= 0
ifeq ($(BARE),1)
  BLAS := builtin
  ZLIB := no
  MPI := 0
  export LC_NO_PYTHON := 1
endif
BUILD ?= build/$(VARIANT)$(if $(filter 1,$(BARE)),-bare)

ifeq ($(BLAS),auto)
  HAVE_OPENBLAS := $(shell printf '\043include <cblas.h>\nint main(void){cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,0,0,0,0,0,1,0,1,0,0,1);return 0;}\n' | $(CC) -x c - -lopenblas -o /dev/null 2>/dev/null && echo yes)
  BLAS := $(if $(HAVE_OPENBLAS),openblas,builtin)
endif
ifneq ($(filter noblas minimal,$(VARIANT)),)
  BLAS := builtin
endif
# zlib (optional): gzip-compressed TSV files for classification are read when zlib.h and libz are present.
#   ZLIB=auto|yes|no
ZLIB ?= auto
ifeq ($(ZLIB),auto)
  ZLIB := $(if $(shell printf '\043include <zlib.h>\nint main(void){return gzclose(gzdopen(0,"rb"))==12345;}\n' | $(CC) -x c - -lz -o /dev/null 2>/dev/null && echo yes),yes,no)
endif
ifeq ($(ZLIB),yes)
  ZLIB_CFLAGS := -DLC_USE_ZLIB
  ZLIB_LIBS := -lz
endif

# MPI (optional): data-parallel training under mpirun (docs/guides/distributed.md). Only src/train/dist_mpi.c
# includes mpi.h; without MPI src/train/dist_none.c (one process) takes its place.
#   MPI=auto|1|0   auto: with MPI when mpicc is on the PATH (Open MPI's --showme gives the flags)
MPI ?= auto
ifeq ($(MPI),auto)
  MPI := $(if $(shell command -v mpicc 2>/dev/null),1,0)
endif
ifeq ($(MPI),1)
  MPI_CFLAGS := $(shell mpicc --showme:compile)
  MPI_LIBS := $(shell mpicc --showme:link)
  DIST_OFF := src/train/dist_none.c
else
  DIST_OFF := src/train/dist_mpi.c
endif

# -Wno-psabi: the 64-byte vectors of src/kernels/vec.h pass between static inline functions only, so GCC's note
# that their ABI differs without AVX-512 (an error under -Werror on other CPUs) does not apply
CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Wshadow \
  -Wno-unused-parameter -Wno-missing-field-initializers -Wno-psabi -Iinclude -Isrc -g -ffp-contract=fast -fno-trapping-math
OPT := -O3 -march=$(ARCH)
OMP := -fopenmp
SAN :=
ifneq ($(filter noomp minimal,$(VARIANT)),)
  OMP := -Wno-unknown-pragmas
endif
ifeq ($(VARIANT),asan)
  OPT := -O1 -march=$(ARCH) -fno-omit-frame-pointer
  SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
endif
ifeq ($(VARIANT),fuzz)
  OPT := -O1 -march=$(ARCH) -fno-omit-frame-pointer
  SAN := -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all
  OMP := -Wno-unknown-pragmas
endif

ifeq ($(BLAS),openblas)
  BLAS_CFLAGS := -DLC_USE_CBLAS -DLC_USE_OPENBLAS
  BLAS_LIBS := -lopenblas
endif

CFLAGS := $(CFLAGS_BASE) $(OPT) $(OMP) $(SAN) $(BLAS_CFLAGS) $(ZLIB_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(OMP) $(SAN)
LDLIBS := $(BLAS_LIBS) $(ZLIB_LIBS) $(MPI_LIBS) -lm

LIB_SRC := $(filter-out $(DIST_OFF),$(wildcard src/core/*.c src/kernels/*.c src/attn/*.c src/nn/*.c src/models/*.c src/models/*/*.c src/train/*.c src/summ/*.c src/lra/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)
# one-off research probes beside their studies (experiments/<study>/*.c; they may read private headers)
EXP_SRC := $(wildcard experiments/*/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
EXP_BIN := $(EXP_SRC:%.c=$(BUILD)/%)
LIB := $(BUILD)/liblongctx.a
CLI := $(BUILD)/longctx
# ---- the portable library: liblongctx.so, and everything `make install` installs (docs/guides/install.md) ----
# The library's sources compiled again into $(PIC)/ with -fPIC for a portable CPU (PORTABLE_ARCH) instead of
# ARCH; on x86-64 (DISPATCH=1) the hot files (DISPATCH_SRC) are compiled a second time for AVX-512 and the
# path is chosen at startup by CPUID (src/core/cpu.h; LC_CPU=generic forces the baseline). The .so exports
# the lc_ names only (tools/exports.map). MPI stays out of it (dist_none.c) unless SHARED_MPI=1.
# `make` builds $(BUILD)/liblongctx.so in the release variant (also: make shared).
VERSION := $(shell sed -n 's/^\#define LC_VERSION_STRING "\(.*\)"/\1/p' include/longctx/version.h)
SO_VERSION := $(VERSION)
SO_NAME := liblongctx.so.$(firstword $(subst ., ,$(VERSION)))
SHARED_MPI ?= 0
IS_X86_64 := $(if $(filter x86_64-%,$(shell $(CC) -dumpmachine)),1,0)
DISPATCH ?= $(IS_X86_64)
PORTABLE_ARCH ?= $(if $(filter 1,$(IS_X86_64)),x86-64-v3)
AVX512_ARCH := -march=x86-64-v4 -mtune=generic
PIC := $(BUILD)/pic
PIC_CFLAGS := $(filter-out -march=%,$(CFLAGS)) $(if $(PORTABLE_ARCH),-march=$(PORTABLE_ARCH)) -fPIC \
  -fno-semantic-interposition $(if $(filter 1,$(DISPATCH)),-DLC_DISPATCH)
PIC_SRC := $(filter-out $(if $(filter 1,$(SHARED_MPI)),$(DIST_OFF),src/train/dist_mpi.c),$(LIB_SRC) $(DIST_OFF))
DISPATCH_SRC := $(wildcard src/kernels/*.c) \
  $(filter-out src/attn/kinds.c src/attn/opts.c src/attn/spec.c src/attn/full_ref.c,$(wildcard src/attn/*.c))
ifeq ($(DISPATCH),1)
  HOT_OBJ := $(DISPATCH_SRC:%.c=$(PIC)/%.o)
  HOT_RAW := $(DISPATCH_SRC:%.c=$(PIC)/raw/%.o)
  HOT_512 := $(DISPATCH_SRC:%.c=$(PIC)/avx512/%.o)
  PIC_OBJ := $(filter-out $(HOT_OBJ),$(PIC_SRC:%.c=$(PIC)/%.o)) $(HOT_OBJ) $(HOT_512) $(PIC)/dispatch.o
else
  PIC_OBJ := $(PIC_SRC:%.c=$(PIC)/%.o)
endif
PIC_LIB := $(PIC)/liblongctx.a
PIC_CLI := $(PIC)/longctx
SO := $(BUILD)/liblongctx.so
SO_LIBS := $(BLAS_LIBS) $(ZLIB_LIBS) $(if $(filter 1,$(SHARED_MPI)),$(MPI_LIBS)) -lm

# The flags a build used, kept in $(FLAGS_STAMP) and rewritten only when they change (OpenBLAS or MPI
# installed since the last build, another CC, EXTRA_CFLAGS): every object depends on it, so such a
# change rebuilds what it affects instead of linking stale objects.
FLAGS_STAMP := $(BUILD)/flags.stamp
FLAGS_NOW := $(CC) $(CFLAGS) $(PIC_CFLAGS) $(MPI_CFLAGS) | $(LDFLAGS) $(LDLIBS)
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  $(shell mkdir -p $(BUILD) && { [ "$$(cat $(FLAGS_STAMP) 2>/dev/null)" = '$(FLAGS_NOW)' ] || printf '%s' '$(FLAGS_NOW)' >$(FLAGS_STAMP); })
endif

.PHONY: all test check demo bench clean shared install uninstall fuzz fuzz-bins
# plain `make` builds everything (the CLI, ./longctx, the library, the .so): `all` must stay the first rule
all: $(LIB) $(CLI) longctx $(if $(filter release,$(VARIANT)),$(SO))
shared: $(SO)

# ./longctx always points at the release build for convenience.
longctx: $(CLI)
	@if [ "$(BUILD)" = build/release ]; then ln -sf $(CLI) longctx; fi

$(BUILD)/%.o: %.c Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(PIC)/%.o: %.c Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC  $< (portable)"
	@$(CC) $(PIC_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/src/train/dist_mpi.o $(PIC)/src/train/dist_mpi.o: CFLAGS += $(MPI_CFLAGS)
$(PIC)/src/train/dist_mpi.o: PIC_CFLAGS += $(MPI_CFLAGS)

ifeq ($(DISPATCH),1)
# hot files: compiled for the baseline and for AVX-512, then renamed (tools/gen_dispatch.sh)
$(HOT_RAW): $(PIC)/raw/%.o: %.c Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC  $< (portable)"
	@$(CC) $(PIC_CFLAGS) -MMD -MP -c $< -o $@
$(PIC)/raw512/%.o: %.c Makefile $(FLAGS_STAMP)
	@mkdir -p $(dir $@)
	@echo "  CC  $< (avx512)"
	@$(CC) $(PIC_CFLAGS) $(AVX512_ARCH) -MMD -MP -c $< -o $@
$(PIC)/dispatch.stamp: $(HOT_RAW) tools/gen_dispatch.sh
	@echo "  GEN $(PIC)/dispatch.c"
	@bash tools/gen_dispatch.sh $(PIC) nm $(HOT_RAW)
	@touch $@
$(PIC)/dispatch.o: $(PIC)/dispatch.stamp
	@$(CC) $(PIC_CFLAGS) -c $(PIC)/dispatch.c -o $@
$(HOT_OBJ): $(PIC)/%.o: $(PIC)/raw/%.o $(PIC)/dispatch.stamp
	@mkdir -p $(dir $@)
	@objcopy --redefine-syms=$(PIC)/dispatch.generic.map $< $@
$(HOT_512): $(PIC)/avx512/%.o: $(PIC)/raw512/%.o $(PIC)/dispatch.stamp
	@mkdir -p $(dir $@)
	@objcopy --redefine-syms=$(PIC)/dispatch.avx512.map $< $@
endif

# liblongctx.so -> liblongctx.so.0 -> liblongctx.so.0.1.0 (soname liblongctx.so.0)
$(SO): $(PIC_OBJ) tools/exports.map
	@echo "  LD  $@"
	@$(CC) -shared -Wl,-soname,$(SO_NAME) -Wl,--version-script=tools/exports.map -Wl,-z,noexecstack $(LDFLAGS) \
	  -o $@.$(SO_VERSION) $(PIC_OBJ) $(SO_LIBS)
	@ln -sf liblongctx.so.$(SO_VERSION) $(BUILD)/$(SO_NAME)
	@ln -sf $(SO_NAME) $@

$(PIC_LIB): $(PIC_OBJ)
	@rm -f $@
	@echo "  AR  $@"
	@ar rcs $@ $^

# the installed CLI: portable objects, the library linked in statically
$(PIC_CLI): $(CLI_SRC:%.c=$(PIC)/%.o) $(PIC_LIB)
	@echo "  LD  $@"
	@$(CC) $(LDFLAGS) -o $@ $^ $(BLAS_LIBS) $(ZLIB_LIBS) $(if $(filter 1,$(SHARED_MPI)),$(MPI_LIBS)) -lm

$(LIB): $(LIB_OBJ)
	@rm -f $@
	@echo "  AR  $@"
	@ar rcs $@ $^

$(CLI): $(CLI_OBJ) $(LIB)
	@echo "  LD  $@"
	@$(CC) $(LDFLAGS) -o $@ $(CLI_OBJ) $(LIB) $(LDLIBS)

$(BUILD)/tests/%: tests/%.c $(LIB) tests/harness.h tests/attn_kit.h
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -MMD -MP -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

# test_dispatch runs the kernels on both CPU paths: in the release variant it links the portable library
ifeq ($(VARIANT)$(DISPATCH),release1)
$(BUILD)/tests/test_dispatch: tests/test_dispatch.c $(PIC_LIB) tests/harness.h
	@mkdir -p $(dir $@)
	@echo "  LD  $@ (portable library)"
	@$(CC) $(CFLAGS) -DLC_TEST_PORTABLE -MMD -MP -o $@ $< $(PIC_LIB) $(LDFLAGS) $(SO_LIBS)
endif

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

$(BUILD)/experiments/%: experiments/%.c $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

test: $(LIB) $(CLI) $(TEST_BIN)
	@bash tests/run.sh $(BUILD) $(VARIANT) $(BLAS) $(MPI)

# ---- make install PREFIX=... [DESTDIR=...] (docs/guides/install.md) ----
PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
# the bundled corpus, where the installed CLI looks when ./data/tinyshakespeare.txt is absent
DATADIR ?= $(PREFIX)/share/longctx

# Where the CLI finds the bundled corpus when ./data/tinyshakespeare.txt is absent (src/cli/data_path.c): the
# build tree's CLI in this source tree's data/, the installed one in $(DATADIR) (make install copies it there).
# Each path is kept in a stamp rewritten when it changes, so data_path.o is rebuilt then (and only it).
DATADIR_SRC := $(CURDIR)/data
DATADIR_STAMP := $(BUILD)/datadir.stamp
DATADIR_PIC_STAMP := $(PIC)/datadir.stamp
ifeq ($(filter clean,$(MAKECMDGOALS)),)
  $(shell mkdir -p $(PIC) && { [ "$$(cat $(DATADIR_STAMP) 2>/dev/null)" = '$(DATADIR_SRC)' ] || printf '%s' '$(DATADIR_SRC)' >$(DATADIR_STAMP); } \
    && { [ "$$(cat $(DATADIR_PIC_STAMP) 2>/dev/null)" = '$(DATADIR)' ] || printf '%s' '$(DATADIR)' >$(DATADIR_PIC_STAMP); })
endif
$(BUILD)/src/cli/data_path.o: $(DATADIR_STAMP)
$(BUILD)/src/cli/data_path.o: CFLAGS += -DLC_DATADIR='"$(DATADIR_SRC)"'
$(PIC)/src/cli/data_path.o: $(DATADIR_PIC_STAMP)
$(PIC)/src/cli/data_path.o: PIC_CFLAGS += -DLC_DATADIR='"$(DATADIR)"'

PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
# the Python package (python/longctx), where Debian's python3 looks for packages of /usr/local
PYTHONDIR ?= $(PREFIX)/lib/python3/dist-packages
# pkg-config: what a static link needs besides the library (the shared one records its own dependencies)
PC_REQUIRES := $(if $(filter openblas,$(BLAS)),$(if $(shell pkg-config --exists openblas 2>/dev/null && echo y),openblas)) \
  $(if $(filter yes,$(ZLIB)),$(if $(shell pkg-config --exists zlib 2>/dev/null && echo y),zlib))
PC_LIBS := $(if $(and $(filter openblas,$(BLAS)),$(filter-out openblas,$(PC_REQUIRES))),-lopenblas) \
  $(if $(and $(filter yes,$(ZLIB)),$(filter-out zlib,$(PC_REQUIRES))),-lz) \
  $(if $(filter noomp minimal,$(VARIANT)),,-lgomp) -lpthread -lm $(if $(filter 1,$(SHARED_MPI)),$(MPI_LIBS))

$(PIC)/longctx.1: $(PIC_CLI) tools/gen_man.sh tools/cli_commands.sh
	@echo "  GEN $@"
	@bash tools/gen_man.sh $(PIC_CLI) $(VERSION) >$@.tmp && mv $@.tmp $@

install: $(PIC_LIB) $(SO) $(PIC_CLI) $(PIC)/longctx.1
	@echo "  INSTALL $(DESTDIR)$(PREFIX)"
	@install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCLUDEDIR)/longctx $(DESTDIR)$(PKGCONFIGDIR) \
	  $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(DATADIR)
	@install -m 644 data/tinyshakespeare.txt $(DESTDIR)$(DATADIR)/
	@install -m 644 include/longctx.h $(DESTDIR)$(INCLUDEDIR)/
	@install -m 644 include/longctx/*.h $(DESTDIR)$(INCLUDEDIR)/longctx/
	@install -m 644 $(PIC_LIB) $(DESTDIR)$(LIBDIR)/
	@install -m 755 $(SO).$(SO_VERSION) $(DESTDIR)$(LIBDIR)/
	@ln -sf liblongctx.so.$(SO_VERSION) $(DESTDIR)$(LIBDIR)/$(SO_NAME)
	@ln -sf $(SO_NAME) $(DESTDIR)$(LIBDIR)/liblongctx.so
	@install -m 755 $(PIC_CLI) $(DESTDIR)$(BINDIR)/
	@install -m 644 $(PIC)/longctx.1 $(DESTDIR)$(MANDIR)/man1/
	@install -d $(DESTDIR)$(PYTHONDIR)/longctx
	@install -m 644 python/longctx/*.py $(DESTDIR)$(PYTHONDIR)/longctx/
	@ln -sf $(LIBDIR)/$(SO_NAME) $(DESTDIR)$(PYTHONDIR)/longctx/liblongctx.so
	@printf '%s\n' 'prefix=$(PREFIX)' 'libdir=$(LIBDIR)' 'includedir=$(INCLUDEDIR)' '' 'Name: longctx' \
	  'Description: long-context Transformers trained and run on the CPU' 'Version: $(VERSION)' \
	  'Requires.private: $(strip $(PC_REQUIRES))' 'Libs: -L$${libdir} -llongctx' \
	  'Libs.private: $(strip $(PC_LIBS))' 'Cflags: -I$${includedir}' >$(DESTDIR)$(PKGCONFIGDIR)/longctx.pc

uninstall:
	rm -f $(DESTDIR)$(INCLUDEDIR)/longctx.h $(addprefix $(DESTDIR)$(INCLUDEDIR)/,$(patsubst include/%,%,$(wildcard include/longctx/*.h))) \
	  $(DESTDIR)$(LIBDIR)/liblongctx.a $(DESTDIR)$(LIBDIR)/liblongctx.so $(DESTDIR)$(LIBDIR)/$(SO_NAME) \
	  $(DESTDIR)$(LIBDIR)/liblongctx.so.$(SO_VERSION) $(DESTDIR)$(PKGCONFIGDIR)/longctx.pc \
	  $(DESTDIR)$(BINDIR)/longctx $(DESTDIR)$(MANDIR)/man1/longctx.1 $(DESTDIR)$(DATADIR)/tinyshakespeare.txt
	rm -rf $(DESTDIR)$(PYTHONDIR)/longctx
	-rmdir $(DESTDIR)$(INCLUDEDIR)/longctx $(DESTDIR)$(DATADIR)

check:
	@bash tests/check_all.sh

# ---- make fuzz: the libFuzzer harnesses of tests/fuzz/ (checkpoint loaders of every family, TSV / gzip / label
# set / vocabulary readers, BBC documents with ROUGE and LexRank), built with clang in build/fuzz/, each run
# FUZZ_RUNS executions from its committed seed corpus tests/fuzz/corpus/<harness>/ (FUZZ_SECONDS=N: N seconds
# each instead). New inputs go to build/fuzz/fuzz/corpus/, crashes to build/fuzz/fuzz/findings/ (tests/fuzz/README.md).
FUZZ_RUNS ?= 2000
FUZZ_SECONDS ?= 0
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/fuzz/%)
$(BUILD)/fuzz/%: tests/fuzz/%.c tests/fuzz/fuzz_kit.h $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)
fuzz-bins: $(FUZZ_BIN)
fuzz:
ifeq ($(VARIANT),fuzz)
	@$(MAKE) --no-print-directory VARIANT=fuzz fuzz-bins
	@bash tests/fuzz/run.sh $(BUILD) $(FUZZ_RUNS) $(FUZZ_SECONDS)
else
	@$(MAKE) --no-print-directory VARIANT=fuzz fuzz
endif

bench: $(LIB) $(CLI) $(BENCH_BIN) $(EXP_BIN)

# The main job: build the CLI (not the shared library), train the default model on the bundled corpus, report
# valid bpc, sample text.
demo: $(LIB) $(CLI) longctx
	./longctx train --out build/demo.ckpt
	./longctx sample --ckpt build/demo.ckpt --prompt "ROMEO:" --tokens 300

clean:
	rm -rf build longctx

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(PIC_SRC:%.c=$(PIC)/%.d) $(CLI_SRC:%.c=$(PIC)/%.d) \
  $(DISPATCH_SRC:%.c=$(PIC)/raw/%.d) $(DISPATCH_SRC:%.c=$(PIC)/raw512/%.d)
