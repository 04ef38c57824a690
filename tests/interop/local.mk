# tests/interop/: TensorFlow checkpoints (interop/, runtime/ckpt_*.c).
#   test_tfckpt_read   every file of ../shared/data/tfckpt/ against its MANIFEST
#                      and TensorFlow's known values; damaged copies
check_PROGRAMS += tests/interop/test_tfckpt_read
tests_interop_test_tfckpt_read_SOURCES = tests/interop/test_tfckpt_read.c $(DATA_TEST_COMMON)
tests_interop_test_tfckpt_read_LDADD = libslim_core.la
TESTS += tests/interop/test_tfckpt_read
#   test_tfckpt_fuzz_replay  the checkpoint fuzzer's kept inputs (fuzz/regress/)
# `make fuzz-tfckpt` builds and runs the libFuzzer harness (clang; not part of check).
check_PROGRAMS += tests/interop/test_tfckpt_fuzz_replay
tests_interop_test_tfckpt_fuzz_replay_SOURCES = tests/interop/test_tfckpt_fuzz_replay.c \
	tests/interop/fuzz_tfckpt.c $(DATA_TEST_COMMON)
tests_interop_test_tfckpt_fuzz_replay_LDADD = libslim_core.la
TESTS += tests/interop/test_tfckpt_fuzz_replay
EXTRA_DIST += tests/interop/fuzz tests/interop/fuzz.sh tests/interop/fuzz_stubs.c
fuzz-tfckpt:
	$(top_srcdir)/tests/interop/fuzz.sh $(FUZZ_TIME)
.PHONY: fuzz-tfckpt
#   test_tfckpt_write  TensorFlow's files written again byte for byte; V1/V2
#                      slices, shards, strings, TF2 names; slim <-> TF round trips
check_PROGRAMS += tests/interop/test_tfckpt_write
tests_interop_test_tfckpt_write_SOURCES = tests/interop/test_tfckpt_write.c $(DATA_TEST_COMMON)
tests_interop_test_tfckpt_write_LDADD = libslim_core.la
TESTS += tests/interop/test_tfckpt_write
#   tfckpt_cli.sh      train --save_format=tf (and resuming from it), ckpt convert,
#                      fine-tuning from V1/V2, eval/predict, ckpt ls/diff, errors
TESTS += tests/interop/tfckpt_cli.sh
EXTRA_DIST += tests/interop/tfckpt_cli.sh
tests/interop/tfckpt_cli.log: tools/slimrun$(EXEEXT) tests/runtime/ckpt_tool$(EXEEXT)
