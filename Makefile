# longctx build. `make` builds the library and the CLI; `make test` runs the test suite on one build
# variant; `make check` runs it on every variant (release, no BLAS, no OpenMP, ASan+UBSan), as CI does.
#   VARIANT=release|noblas|noomp|asan   (build/$(VARIANT)/)
#   BLAS=auto|openblas|builtin          auto: OpenBLAS when its header and library are present
CC ?= gcc
VARIANT ?= release
BLAS ?= auto
ARCH ?= native
BUILD ?= build/$(VARIANT)

ifeq ($(BLAS),auto)
  HAVE_OPENBLAS := $(shell printf '\043include <cblas.h>\nint main(void){cblas_sgemm(CblasRowMajor,CblasNoTrans,CblasNoTrans,0,0,0,0,0,1,0,1,0,0,1);return 0;}\n' | $(CC) -x c - -lopenblas -o /dev/null 2>/dev/null && echo yes)
  BLAS := $(if $(HAVE_OPENBLAS),openblas,builtin)
endif
ifneq ($(filter noblas,$(VARIANT)),)
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

# MPI (optional): data-parallel training under mpirun (docs/distributed.md). Only src/train/dist_mpi.c
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

CFLAGS_BASE := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Werror -Wshadow \
  -Wno-unused-parameter -Wno-missing-field-initializers -Iinclude -Isrc -g -ffp-contract=fast -fno-trapping-math
OPT := -O3 -march=$(ARCH)
OMP := -fopenmp
SAN :=
ifeq ($(VARIANT),noomp)
  OMP := -Wno-unknown-pragmas
endif
ifeq ($(VARIANT),asan)
  OPT := -O1 -march=$(ARCH) -fno-omit-frame-pointer
  SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
endif

ifeq ($(BLAS),openblas)
  BLAS_CFLAGS := -DLC_USE_CBLAS -DLC_USE_OPENBLAS
  BLAS_LIBS := -lopenblas
endif

CFLAGS := $(CFLAGS_BASE) $(OPT) $(OMP) $(SAN) $(BLAS_CFLAGS) $(ZLIB_CFLAGS) $(EXTRA_CFLAGS)
LDFLAGS := $(OMP) $(SAN)
LDLIBS := $(BLAS_LIBS) $(ZLIB_LIBS) $(MPI_LIBS) -lm

LIB_SRC := $(filter-out $(DIST_OFF),$(wildcard src/core/*.c src/kernels/*.c src/attn/*.c src/nn/*.c src/model/*.c src/train/*.c src/summ/*.c src/lra/*.c))
CLI_SRC := $(wildcard src/cli/*.c)
TEST_SRC := $(wildcard tests/test_*.c)
BENCH_SRC := $(wildcard bench/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
CLI_OBJ := $(CLI_SRC:%.c=$(BUILD)/%.o)
TEST_BIN := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
BENCH_BIN := $(BENCH_SRC:bench/%.c=$(BUILD)/bench/%)
LIB := $(BUILD)/liblongctx.a
CLI := $(BUILD)/longctx
# The shared library: the same sources compiled with -fPIC into $(BUILD)/pic/ (make $(BUILD)/liblongctx.so,
# built by `make` in the release variant). MPI stays out of it (dist_none.c) unless SHARED_MPI=1.
SHARED_MPI ?= 0
SO_VERSION := 0.1.0
SO_NAME := liblongctx.so.0
PIC_SRC := $(filter-out $(if $(filter 1,$(SHARED_MPI)),$(DIST_OFF),src/train/dist_mpi.c),$(wildcard src/core/*.c src/kernels/*.c src/attn/*.c src/nn/*.c src/model/*.c src/train/*.c src/summ/*.c src/lra/*.c))
PIC_OBJ := $(PIC_SRC:%.c=$(BUILD)/pic/%.o)
SO := $(BUILD)/liblongctx.so
SO_LIBS := $(BLAS_LIBS) $(ZLIB_LIBS) $(if $(filter 1,$(SHARED_MPI)),$(MPI_LIBS)) -lm

.PHONY: all test check demo bench clean shared
shared: $(SO)
all: $(LIB) $(CLI) longctx $(if $(filter release,$(VARIANT)),$(SO))

# ./longctx always points at the release build for convenience.
longctx: $(CLI)
	@if [ "$(BUILD)" = build/release ]; then ln -sf $(CLI) longctx; fi

$(BUILD)/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC  $<"
	@$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/pic/%.o: %.c Makefile
	@mkdir -p $(dir $@)
	@echo "  CC  $< (pic)"
	@$(CC) $(CFLAGS) -fPIC -MMD -MP -c $< -o $@

$(BUILD)/src/train/dist_mpi.o $(BUILD)/pic/src/train/dist_mpi.o: CFLAGS += $(MPI_CFLAGS)

# liblongctx.so -> liblongctx.so.0 -> liblongctx.so.0.1.0 (soname liblongctx.so.0)
$(SO): $(PIC_OBJ)
	@echo "  LD  $@"
	@$(CC) -shared -Wl,-soname,$(SO_NAME) $(LDFLAGS) -o $@.$(SO_VERSION) $^ $(SO_LIBS)
	@ln -sf liblongctx.so.$(SO_VERSION) $(BUILD)/$(SO_NAME)
	@ln -sf $(SO_NAME) $@

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

$(BUILD)/bench/%: bench/%.c $(LIB)
	@mkdir -p $(dir $@)
	@echo "  LD  $@"
	@$(CC) $(CFLAGS) -o $@ $< $(LIB) $(LDFLAGS) $(LDLIBS)

test: $(LIB) $(CLI) $(TEST_BIN)
	@bash tests/run.sh $(BUILD) $(VARIANT) $(BLAS) $(MPI)

check:
	@bash tests/check_all.sh

bench: $(LIB) $(CLI) $(BENCH_BIN)

# The main job: build, train the default model on the bundled corpus, report valid bpc, sample text.
demo: all
	./longctx train --out build/demo.ckpt
	./longctx sample --ckpt build/demo.ckpt --prompt "ROMEO:" --tokens 300

clean:
	rm -rf build longctx

-include $(LIB_OBJ:.o=.d) $(CLI_OBJ:.o=.d) $(TEST_BIN:=.d) $(PIC_OBJ:.o=.d)
