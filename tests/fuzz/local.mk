# tests/fuzz/: libFuzzer harnesses for every parser a user's file reaches
# (tests/fuzz/README.md). Each harness is one file, listed here; the list
# builds the replay test (the ordinary build runs every kept input through
# its harness) and `make fuzz` (clang, ASan + UBSan, one program each).
FUZZ_HARNESSES = \
	tests/fuzz/checkpoint.c \
	tests/fuzz/convert.c \
	tests/fuzz/dataset.c \
	tests/fuzz/dsl.c \
	tests/fuzz/example.c \
	tests/fuzz/idx.c \
	tests/fuzz/jpeg.c \
	tests/fuzz/jpeg_transcode.c \
	tests/fuzz/npy.c \
	tests/fuzz/onnx.c \
	tests/fuzz/onnx_export.c \
	tests/fuzz/pipeline.c \
	tests/fuzz/png.c \
	tests/fuzz/png_crc.c \
	tests/fuzz/recipe.c \
	tests/fuzz/tfckpt.c \
	tests/fuzz/tfgraph.c \
	tests/fuzz/tfrecord.c

check_PROGRAMS += tests/fuzz/test_fuzz_replay
TESTS += tests/fuzz/test_fuzz_replay
tests_fuzz_test_fuzz_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.c tests/fuzz/fuzz.h tests/fuzz/fuzz_model.h \
	$(FUZZ_HARNESSES)
tests_fuzz_test_fuzz_replay_LDADD = libslim_core.la
EXTRA_DIST += tests/fuzz/README.md tests/fuzz/fuzz.sh tests/fuzz/build.mk tests/fuzz/dict tests/fuzz/regress

# make fuzz [FUZZ_TIME=seconds per harness] [FUZZ_ONLY="jpeg png"] [FUZZ_JOBS=2]
# builds the library and the harnesses with clang -fsanitize=fuzzer,address,
# undefined in fuzz-out/ (the ordinary build needs no clang) and runs each
# harness in turn; findings land in fuzz-out/NAME/artifacts/.
FUZZ_TIME = 60
FUZZ_ONLY =
FUZZ_JOBS = 2
fuzz: $(BUILT_SOURCES)
	@FUZZ_HARNESSES='$(FUZZ_HARNESSES)' FUZZ_JOBS='$(FUZZ_JOBS)' MAKE='$(MAKE)' \
	  $(SHELL) $(top_srcdir)/tests/fuzz/fuzz.sh $(FUZZ_TIME) $(FUZZ_ONLY)
.PHONY: fuzz
