# tests/conformance/: ONNX operator conformance. Runs the cases of Debian's
# libonnx-testdata through the library's ONNX importer (interop/), and skips
# (a "1..0 # SKIP" plan) without them.

check_PROGRAMS += tests/conformance/onnx_runner
tests_conformance_onnx_runner_SOURCES = tests/conformance/onnx_runner.c
tests_conformance_onnx_runner_LDADD = libslim_core.la
TESTS += tests/conformance/onnx_runner
