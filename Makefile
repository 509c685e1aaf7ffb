# Thin wrapper over CMake. `make demo` and `make test` work on a fresh
# Debian machine as root: they install missing packages first.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CLANG_FORMAT ?= clang-format-15
CMAKE_FLAGS ?=
ifdef CI
CMAKE_FLAGS += -DWMAP_WERROR=ON
endif
SOURCES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

.PHONY: all deps build test test-fast test-asan demo install format format-check clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)

# The normal build with its tests, then the ASan+UBSan build with its tests.
test: deps format-check build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)
	$(MAKE) --no-print-directory test-asan

test-asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DWMAP_SANITIZE=ON $(CMAKE_FLAGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -L 'unit|conform|fuzz|e2e|mpi'

# Installs the library, headers, wmap.pc, the CMake package, the plugins,
# the CLI, docs and man pages under PREFIX (staged under DESTDIR if set).
PREFIX ?= /usr/local
install: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j $(JOBS)
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

demo: build
	@scripts/demo.sh $(BUILD)

format:
	$(CLANG_FORMAT) -i $(SOURCES)

format-check: deps
	@$(CLANG_FORMAT) --dry-run -Werror $(SOURCES) && echo "format-check: ok"

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
