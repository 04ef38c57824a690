# tests/interop/: TensorFlow checkpoints (interop/, runtime/ckpt_*.c).
#   test_tfckpt_read   every file of ../shared/data/tfckpt/ against its MANIFEST
#                      and TensorFlow's known values; damaged copies
check_PROGRAMS += tests/interop/test_tfckpt_read
tests_interop_test_tfckpt_read_SOURCES = tests/interop/test_tfckpt_read.c $(DATA_TEST_COMMON)
tests_interop_test_tfckpt_read_LDADD = libslim_core.la
TESTS += tests/interop/test_tfckpt_read
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
#   test_tfckpt_models TensorFlow's reference ResNet blocks, batch norm and dense
#                      layers and its trained MNIST CNN, written in the DSL
#                      (tests/interop/models/), run from TensorFlow's checkpoints
#                      against results.json / MNIST labels
check_PROGRAMS += tests/interop/test_tfckpt_models
tests_interop_test_tfckpt_models_SOURCES = tests/interop/test_tfckpt_models.c $(DATA_TEST_COMMON)
tests_interop_test_tfckpt_models_LDADD = libslim_core.la
TESTS += tests/interop/test_tfckpt_models
EXTRA_DIST += tests/interop/models
#   tfckpt_zoo.sh      LeNet, CifarNet, ResNet-50: convert to V1, ckpt diff, fine-tune
#                      from the V1 file = from slim's checkpoint, bit for bit
TESTS += tests/interop/tfckpt_zoo.sh
EXTRA_DIST += tests/interop/tfckpt_zoo.sh
tests/interop/tfckpt_zoo.log: tools/slimrun$(EXEEXT) tests/runtime/ckpt_tool$(EXEEXT)
