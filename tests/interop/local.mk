# tests/interop/: TensorFlow checkpoints (interop/, runtime/ckpt_*.c), ONNX, .npy.
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

#   test_tfgraph       frozen GraphDefs imported: dl4j's conv_0 against its output,
#                      lenet_frozen.pb's TF-Slim names, every mapped op against a
#                      plain computation, malformed and unsupported graphs
check_PROGRAMS += tests/interop/test_tfgraph
tests_interop_test_tfgraph_SOURCES = tests/interop/test_tfgraph.c $(DATA_TEST_COMMON)
tests_interop_test_tfgraph_LDADD = libslim_core.la
TESTS += tests/interop/test_tfgraph

# The ONNX importer and .npy files (interop/):
#   test_onnx           models built in C (onnx_gen.c): names and layouts, a small
#                       network against a reference, unsupported ops, an op plugin's
#                       ONNX op, malformed files; .npy round trip and bad files
#   test_torchvision.sh torchvision classifiers exported by Debian's PyTorch, imported
#                       and compared with PyTorch's logits (skipped without torch)
# tests/interop/coverage.py runs every torchvision classifier at three opsets (not
# part of check: see README, "ONNX"). The importer's and .npy's fuzz harnesses
# are tests/fuzz/onnx.c and npy.c.
check_PROGRAMS += tests/interop/test_onnx
tests_interop_test_onnx_SOURCES = tests/interop/test_onnx.c tests/interop/onnx_gen.c \
	tests/interop/onnx_gen.h tests/data/tap.c tests/data/tap.h
tests_interop_test_onnx_LDADD = libslim_core.la
TESTS += tests/interop/test_onnx tests/interop/test_torchvision.sh

EXTRA_DIST += tests/interop/torch_export.py tests/interop/coverage.py \
	tests/interop/test_torchvision.sh

# tests/interop/test_onnx_export.sh: zoo models exported (slimrun export) and run in
# ONNX Runtime (npm's onnxruntime-node, through ort_run.js; skipped without node or it)
# and imported back (slimrun import), against slimrun predict's logits.
# export_fixture writes the checkpoints and inputs it uses and compares .npy files.
check_PROGRAMS += tests/interop/export_fixture
tests_interop_export_fixture_SOURCES = tests/interop/export_fixture.c \
	tests/interop/export_graphs.c
tests_interop_export_fixture_LDADD = libslim_core.la -lm
TESTS += tests/interop/test_onnx_export.sh
EXTRA_DIST += tests/interop/test_onnx_export.sh tests/interop/ort_run.js \
	tests/interop/export_zoo.sh
