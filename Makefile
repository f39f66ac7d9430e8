# The README's commands. Each installs what is missing (scripts/install-deps.sh), configures the
# one release build tree they share (build/release) with the same options, builds only what it
# runs and runs it; none rebuilds the library because another ran (`make bench` only adds
# targets). `make asan` has a tree of its own (build/asan).
#
# WERROR=ON (the default under CI) fails a build that printed a compiler or linker warning. The
# build log is checked instead of passing -Werror, so the compile commands, and with them the
# compiler cache's keys, are the same for CI and for a user: a clone built once warms the cache
# for the next.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -ec
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
WERROR ?= $(if $(CI),ON,OFF)
RELEASE := build/release
ASAN := build/asan

# CUDA machine code for this machine's GPUs (none: PTX only) unless OXMERA_CUDA_ARCHS says
# otherwise ("all", or "86;90"); `make install` builds every generation (docs/CUDA.md).
OXMERA_CUDA_ARCHS ?=
CUDA_ARCHS = $(OXMERA_CUDA_ARCHS)
install: CUDA_ARCHS = $(or $(OXMERA_CUDA_ARCHS),all)

# $(call configure,PRESET[,OPTIONS]): quiet unless it fails.
configure = log=$$(cmake --preset $(1) -DOXMERA_WERROR=OFF "-DOXMERA_CUDA_ARCHS=$(CUDA_ARCHS)" \
	$(2) 2>&1) || { echo "$$log"; exit 1; }
# $(call build,PRESET,TARGETS...)
build = mkdir -p build/$(1) && cmake --build --preset $(1) -j $(JOBS) $(if $(2),--target $(2)) 2>&1 \
	| tee build/$(1)/make-build.log; $(check_warnings)
# A warning located in a system header is not ours: GCC suppresses those, except that GCC 12
# reports some (-Warray-bounds inside std::string) when the header came from a precompiled one.
warnings = grep -E "warning:" build/$(1)/make-build.log | grep -vE "^/usr/(include|lib)/"
check_warnings = if [ "$(WERROR)" = ON ] && $(warnings) >/dev/null; then \
	echo "make: the build printed warnings and WERROR=ON; they are:"; $(warnings); \
	exit 1; fi

.PHONY: all build run test asan bench install format check-style clean

all: build

# The library and the `oxmera` command: what `make run` and `make install` need.
build:
	@bash scripts/install-deps.sh
	@$(call configure,release)
	@$(call build,release,oxmera oxmera_cli)

run: build
	./$(RELEASE)/tools/oxmera/oxmera train --recipe cnn --epochs 1 --scheduler onecycle --lr 4e-3 \
	  --data /usr/share/datasets/fashion-mnist --save build/oxmera-cnn.safetensors

test:
	@bash scripts/install-deps.sh --test
	@$(call configure,release)
	@$(call build,release,)
	ctest --preset release

asan:
	@bash scripts/install-deps.sh --test
	@$(call configure,asan)
	@$(call build,asan,)
	ctest --preset asan

# ANCHOR=wheel adds a column: LibTorch from the newest torch wheel on PyPI (build/torch-wheel,
# which install-deps --bench fills for the Hugging Face rows' reference; delete it to take a
# newer one), in a twin of oxmera_bench built against it.
ifeq ($(ANCHOR),wheel)
WHEEL := $(CURDIR)/build/torch-wheel
bench_twin := oxmera_bench_wheel
bench_args := --anchor=$(RELEASE)/bench/oxmera_bench_wheel
else ifneq ($(ANCHOR),)
$(error ANCHOR=$(ANCHOR): the one anchor there is, is ANCHOR=wheel)
endif

bench:
	@bash scripts/install-deps.sh --bench
	@$(call configure,release,-DOXMERA_BUILD_BENCH=ON -DOXMERA_BENCH_TORCH_WHEEL=$(if $(WHEEL),$(WHEEL)/torch))
	@$(call build,release,oxmera_bench oxmera_alloc_bench $(bench_twin))
	./$(RELEASE)/bench/oxmera_bench $(bench_args)

install: build
	cmake --install $(RELEASE) --prefix $(PREFIX)

format:
	@bash scripts/install-deps.sh --format
	clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh')

# What CI checks before it builds (seconds): every source file as .clang-format has it, and no
# reference to a file the repository does not hold.
check-style:
	@bash scripts/install-deps.sh --format
	@git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror
	@bash scripts/check-doc-refs.sh

clean:
	rm -rf build
