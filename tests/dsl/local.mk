# tests/dsl/: the model language and the zoo.
#   test_zoo        every zoo model: parameter counts at the default size, one
#                   training step at batch 2 on a small input
#   test_fastpath   whole models: one training step with the fast kernels (2
#                   threads) against the reference kernels (1 thread)
#   test_dsl        the language's features, and every malformed file in
#                   tests/dsl/bad/ with its exact message (first line: # error: ...)
#   test_inspect.sh   slimrun inspect from the command line
# The model-file fuzzer is tests/fuzz/dsl.c (`make fuzz FUZZ_ONLY=dsl`).
check_PROGRAMS += tests/dsl/test_zoo tests/dsl/test_fastpath tests/dsl/test_dsl
TESTS += tests/dsl/test_dsl tests/dsl/test_inspect.sh tests/dsl/test_zoo tests/dsl/test_fastpath
EXTRA_DIST += tests/dsl/test_inspect.sh
tests_dsl_test_zoo_SOURCES = tests/dsl/test_zoo.c tests/dsl/tap.h
tests_dsl_test_zoo_LDADD = libslim_core.la
tests_dsl_test_fastpath_SOURCES = tests/dsl/test_fastpath.c tests/dsl/tap.h
tests_dsl_test_fastpath_LDADD = libslim_core.la
tests_dsl_test_dsl_SOURCES = tests/dsl/test_dsl.c tests/dsl/tap.h
tests_dsl_test_dsl_LDADD = libslim_core.la
EXTRA_DIST += tests/dsl/bad tests/dsl/good tests/dsl/count_params.py
