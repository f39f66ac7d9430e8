# The README's commands. Each installs what is missing (scripts/install-deps.sh), builds with
# the CMake presets and runs. WERROR=1 makes warnings errors (CI sets it).
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
WERROR ?= $(if $(CI),ON,OFF)
CONFIGURE = cmake --preset $(1) -DOXMERA_WERROR=$(WERROR) $(2) >/dev/null

.PHONY: all deps build run test asan bench install format clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@$(call CONFIGURE,release)
	cmake --build --preset release -j $(JOBS)

run: build
	./build/release/tools/oxmera/oxmera train --recipe cnn --epochs 1 --scheduler onecycle --lr 4e-3 \
	  --data /usr/share/datasets/fashion-mnist --save build/oxmera-cnn.safetensors

test: build
	ctest --preset release

asan: deps
	@$(call CONFIGURE,asan)
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan

bench:
	@bash scripts/install-deps.sh --bench
	@$(call CONFIGURE,release,-DOXMERA_BUILD_BENCH=ON)
	cmake --build --preset release -j $(JOBS) --target oxmera_bench oxmera_alloc_bench
	./build/release/bench/oxmera_bench

install: build
	cmake --install build/release --prefix $(PREFIX)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu')

clean:
	rm -rf build
