# tests/dsl/: the model language and the zoo.
#   test_zoo        every zoo model: parameter counts at the default size, one
#                   training step at batch 2 on a small input
#   test_fastpath   whole models: one training step with the fast kernels (2
#                   threads) against the reference kernels (1 thread)
#   test_dsl        the language's features, and every malformed file in
#                   tests/dsl/bad/ with its exact message (first line: # error: ...)
#   test_fuzz_replay  the fuzzer's findings (tests/dsl/fuzz/regress/) replayed
#   test_inspect.sh   slimrun inspect from the command line
# `make fuzz-dsl` builds and runs the libFuzzer harness (clang; not part of check).
check_PROGRAMS += tests/dsl/test_zoo tests/dsl/test_fastpath tests/dsl/test_dsl tests/dsl/test_fuzz_replay
TESTS += tests/dsl/test_dsl tests/dsl/test_fuzz_replay tests/dsl/test_inspect.sh tests/dsl/test_zoo \
	tests/dsl/test_fastpath
EXTRA_DIST += tests/dsl/test_inspect.sh
tests_dsl_test_zoo_SOURCES = tests/dsl/test_zoo.c tests/dsl/tap.h
tests_dsl_test_zoo_LDADD = libslim_core.la
tests_dsl_test_fastpath_SOURCES = tests/dsl/test_fastpath.c tests/dsl/tap.h
tests_dsl_test_fastpath_LDADD = libslim_core.la
tests_dsl_test_dsl_SOURCES = tests/dsl/test_dsl.c tests/dsl/tap.h
tests_dsl_test_dsl_LDADD = libslim_core.la
tests_dsl_test_fuzz_replay_SOURCES = tests/dsl/test_fuzz_replay.c tests/dsl/fuzz_target.c \
	tests/dsl/tap.h
tests_dsl_test_fuzz_replay_LDADD = libslim_core.la
EXTRA_DIST += tests/dsl/bad tests/dsl/good tests/dsl/fuzz tests/dsl/count_params.py \
	tests/dsl/fuzz.sh

# The libFuzzer harness: clang with -fsanitize=fuzzer,address,undefined over
# the library's sources (compiled again with the sanitizers).
FUZZ_TIME = 60
fuzz-dsl:
	$(top_srcdir)/tests/dsl/fuzz.sh $(FUZZ_TIME)
.PHONY: fuzz-dsl
