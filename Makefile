# The README's commands. Each installs what is missing (scripts/install-deps.sh), builds with
# the CMake presets and runs. WERROR=1 makes warnings errors (CI sets it).
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
WERROR ?= $(if $(CI),ON,OFF)
CONFIGURE = cmake --preset $(1) -DOXMERA_WERROR=$(WERROR) >/dev/null

.PHONY: all deps build run test asan bench install format clean

all: build

deps:
	@bash scripts/install-deps.sh

build: deps
	@$(call CONFIGURE,release)
	cmake --build --preset release -j $(JOBS)

run: build
	./build/release/examples/tensor_tour

test: build
	ctest --preset release

asan: deps
	@$(call CONFIGURE,asan)
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan

bench: build
	@echo "make bench: the benchmark suite arrives with the op surface (bench/)." && exit 1

install: build
	cmake --install build/release --prefix $(PREFIX)

format:
	clang-format -i $$(git ls-files '*.h' '*.cpp' '*.cu')

clean:
	rm -rf build
