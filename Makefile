# kef: `make demo` and `make test` work from a fresh clone on Debian bookworm.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The ASan + UBSan build (make test-sanitize, make fuzz) and the fuzzers' time per target.
SANITIZE_DIR ?= build-sanitize
FUZZ_SECONDS ?= 30

.PHONY: all deps configure build demo test test-sanitize fuzz bench docs install clean format

all: build

deps:
	bash scripts/install-deps.sh

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_FLAGS)

configure: $(BUILD_DIR)/build.ninja

build: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Only the kef command and the bundled plugins (target kef_tool), not the tests and benchmarks.
demo: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target kef_tool
	$(BUILD_DIR)/bin/kef run configs/quickstart.toml

test: build
	ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

# The test suite built with clang, ASan and UBSan in $(SANITIZE_DIR): any sanitizer report fails its
# test (UBSan does not recover; LSan's leak check is on). Tests labelled sanitize_skip are left out:
# each is slow under the sanitizers and repeats code that faster tests run there (or, sdk_consumer,
# cannot run there); the reason is beside each label in its tests/ CMakeLists.txt, and
# `ctest -N -L sanitize_skip` lists them.
test-sanitize: deps
	bash scripts/configure-sanitize.sh $(SANITIZE_DIR) $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} \
	LSAN_OPTIONS=$${LSAN_OPTIONS:-suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0} \
	UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS) -LE sanitize_skip

# The libFuzzer targets (NPY, CSV, TOML, model archive) for FUZZ_SECONDS each, in the sanitizer build.
fuzz: deps
	KEF_FUZZ_BUILD_DIR=$(abspath $(SANITIZE_DIR)) JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	bash scripts/install-deps.sh --bench
	bash bench/run.sh $(BUILD_DIR)

# The manual, built into $(BUILD_DIR)/docs/html with Sphinx and MyST (warnings are errors); its
# component reference is generated from the built kef's key declarations.
docs: deps configure
	cmake --build $(BUILD_DIR) -j $(JOBS) --target docs

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp' '*.h')

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR)
