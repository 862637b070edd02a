# kef: `make demo` and `make test` work from a fresh clone on Debian bookworm.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# The ASan + UBSan build (make test-sanitize, make fuzz) and the fuzzers' time per target.
SANITIZE_DIR ?= build-sanitize
FUZZ_SECONDS ?= 30
# Left out of the sanitizer run (see README, "Sanitizers and fuzzing"): sdk_consumer installs kef and
# builds programs against it without the sanitizer runtime, which an instrumented libkef needs;
# reproduce_dkef_quick, the slowest test (35 s in Release, 139 s and then its 300 s timeout under the
# sanitizers on a loaded machine), runs DKEF end to end, whose code dkef_test runs under them (so does
# reproduce_dkef_real_quick, with the flows and baselines whose suites run under them); the BKL experiments' script smoke tests only drive `kef test`,
# whose code the kernel_learning and kernel_tests suites run under them.
# The four slowest reliability tests and the AIS truth test (42-54 s each under the sanitizers: they
# are statistical, many proposals) run in make test; the likelihood suite's other tests cover the same
# code under the sanitizers.
# The DDE example pipeline and the Table 1/2 smoke tests (109, 70 and 17 s under the sanitizers on a
# loaded machine, which took CI past 45 minutes) run training loops whose code dde_test, the
# lscde/eps_kde suites and the conditional likelihood tests run under them; so does
# AnEasyGaussianIsNotFlagged (35 s), whose estimator the other reliability tests cover. Session 10
# (CI at 51 min): the conditional DDE's convergence test (136 s under the sanitizers; its gradients and
# estimator are tested there), the two clustered-mixture pipelines (43, 31 s; the mixture's unit tests
# stay), KCEF's sine recovery (31 s; its derivative and twin tests stay) and the causal-discovery
# recovery (22 s; the PC algorithm's unit tests stay). Session 12: DDE's Gaussian-target convergence
# test (8 s in Release, 6000 training iterations; the gradients and f step it rests on stay) and its
# log-likelihood test (6 s: defensive sampling, AIS and quadrature, each tested under them elsewhere).
# Session 19 (CI at 47 min on a fresh clone, idle machine: 1206 + 1564 + 47 s): the slowest of the
# rest under the sanitizers (12-40 s each, 260 s in all), each a repetition of code that faster tests
# of its suite run there: the whole-pipeline and evaluator-by-rows runs on simulated processes (the
# reductions, the file-read pipeline and the by-rows pieces stay), the defensive mixture's 200 000
# proposals, the strict and bidirectional-AIS reliability checks, the synthetic sources' quadrature
# moments, KCEF's grid extension, three KAHMC convergence runs, the baselines' two-sample check and
# the Nyström study's smoke test.
SANITIZE_EXCLUDE ?= ^(sdk_consumer|DistributedReduce\.(APipelineOnSeveralProcessesWritesTheSingleProcessResults|EveryEvaluatorAndTheSavedSplitReadTheFileByRowsAsOneProcessReadsItsSplit)|DefensiveProposal\.ImportanceSamplingFromTheMixtureRecoversAKnownNormaliser|SyntheticSources\.NormalisedAndSamplesMatchQuadratureMoments|Kcef\.CrossValidationContinuesAGridPastTheEndWhereTheBestLies|Kahmc\.(PoorSurrogateStillTargetsTheRightDistribution|AdaptationScheduleDecaysLikeKToTheMinusDelta|NystromSurrogateTargetsTheGaussianIndependentlyOfThreads)|Baselines\.ExactSamplesPassATwoSampleTestAgainstTheDensity|reproduce_nystrom_quick|DdeConditionalEstimator\.ApproachesTheTrueConditionalLogLikelihood|DdePenalisedMle\.OnAGaussianTargetDdeApproachesThePenalisedMle|DdeCli\.LogLikelihoodAgreesWithQuadratureAndIsReliable|ClusterMixture\.PipelineOnMixtureOfRingsWithInner(Lite|Dkef)|Kcef\.RecoversAHeteroscedasticSine|KernelCausalDiscovery\.RecoversTheCpdagOfANonlinearColliderForAnyThreadCount|reproduce_dkef_quick|reproduce_dkef_real_quick|reproduce_dde_table1_quick|reproduce_dde_table2_quick|DdeCli\.ExamplePipelineRuns|bkl_experiment2_quick|bkl_experiment3_quick|LogLikelihoodReliability\.(StrictTurnsAnUnreliableValueIntoAnErrorNamingModelAndEvaluator|BidirectionalAisBracketsAModelWithAnExactSampler|AnEasyGaussianIsNotFlagged|AFittedLiteModelAgreesWithQuadrature|ASpikeFarFromQ0IsFlaggedWithQ0OnlyAndRightWithTheDefensiveMixture|HeavyTailsAreFlaggedWithQ0OnlyAndRightWithTheNewEstimators|ANarrowBaseMeasureIsFlaggedAndTheDefensiveEstimateIsRight)|Ais\.SyntheticTruthsAgainstTheirExactNormaliser)$$

.PHONY: all deps configure build demo test test-sanitize fuzz bench install clean format

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
# test (UBSan does not recover; LSan's leak check is on).
test-sanitize: deps
	bash scripts/configure-sanitize.sh $(SANITIZE_DIR) $(CMAKE_FLAGS)
	cmake --build $(SANITIZE_DIR) -j $(JOBS)
	ASAN_OPTIONS=$${ASAN_OPTIONS:-detect_leaks=1} \
	LSAN_OPTIONS=$${LSAN_OPTIONS:-suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0} \
	UBSAN_OPTIONS=$${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
	ctest --test-dir $(SANITIZE_DIR) --output-on-failure -j $(JOBS) -E '$(SANITIZE_EXCLUDE)'

# The libFuzzer targets (NPY, CSV, TOML, model archive) for FUZZ_SECONDS each, in the sanitizer build.
fuzz: deps
	KEF_FUZZ_BUILD_DIR=$(abspath $(SANITIZE_DIR)) JOBS=$(JOBS) bash scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	bash scripts/install-deps.sh --bench
	bash bench/run.sh $(BUILD_DIR)

install: build
	cmake --install $(BUILD_DIR) --prefix $(or $(PREFIX),/usr/local)

format:
	clang-format -i $$(git ls-files '*.cpp' '*.hpp' '*.h')

clean:
	rm -rf $(BUILD_DIR) $(SANITIZE_DIR)
