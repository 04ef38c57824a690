# tests/data/: records, images, recipes, the pipeline, converters (datasets/).
# Tests that need ../shared/data skip (a TAP "1..0 # SKIP" plan) without it.
DATA_TEST_COMMON = tests/data/tap.c tests/data/tap.h

check_PROGRAMS += tests/data/test_records
tests_data_test_records_SOURCES = tests/data/test_records.c $(DATA_TEST_COMMON)
tests_data_test_records_LDADD = libslim_core.la
TESTS += tests/data/test_records

check_PROGRAMS += tests/data/test_images
tests_data_test_images_SOURCES = tests/data/test_images.c $(DATA_TEST_COMMON)
tests_data_test_images_LDADD = libslim_core.la
TESTS += tests/data/test_images

check_PROGRAMS += tests/data/test_jpeg_index
tests_data_test_jpeg_index_SOURCES = tests/data/test_jpeg_index.c $(DATA_TEST_COMMON)
tests_data_test_jpeg_index_LDADD = libslim_core.la
TESTS += tests/data/test_jpeg_index

check_PROGRAMS += tests/data/test_recipes
tests_data_test_recipes_SOURCES = tests/data/test_recipes.c $(DATA_TEST_COMMON)
tests_data_test_recipes_LDADD = libslim_core.la
TESTS += tests/data/test_recipes

check_PROGRAMS += tests/data/test_bbox
tests_data_test_bbox_SOURCES = tests/data/test_bbox.c $(DATA_TEST_COMMON)
tests_data_test_bbox_LDADD = libslim_core.la
TESTS += tests/data/test_bbox

check_PROGRAMS += tests/data/test_feed
tests_data_test_feed_SOURCES = tests/data/test_feed.c $(DATA_TEST_COMMON)
tests_data_test_feed_LDADD = libslim_core.la
TESTS += tests/data/test_feed

check_PROGRAMS += tests/data/test_pipeline
tests_data_test_pipeline_SOURCES = tests/data/test_pipeline.c $(DATA_TEST_COMMON)
tests_data_test_pipeline_LDADD = libslim_core.la
TESTS += tests/data/test_pipeline

check_PROGRAMS += tests/data/test_convert
tests_data_test_convert_SOURCES = tests/data/test_convert.c $(DATA_TEST_COMMON)
tests_data_test_convert_LDADD = libslim_core.la
TESTS += tests/data/test_convert

# data_cli.sh: slimrun data decode from the command line
TESTS += tests/data/data_cli.sh
EXTRA_DIST += tests/data/data_cli.sh
tests/data/data_cli.log: tools/slimrun$(EXEEXT)

# jpeg_simd.sh: libjpeg-turbo's SIMD decode equals its C decode and does not
# depend on the heap's contents (why check-valgrind runs the C paths)
TESTS += tests/data/jpeg_simd.sh
EXTRA_DIST += tests/data/jpeg_simd.sh tests/data/jpeg-sampling/MANIFEST.md \
	tests/data/jpeg-sampling/arith-y2x2-1x4-1x1.jpg \
	tests/data/jpeg-sampling/y1x2-1x1-1x1.jpg \
	tests/data/jpeg-sampling/y2x1-1x1-1x1.jpg \
	tests/data/jpeg-sampling/y2x2-1x1-1x1.jpg \
	tests/data/jpeg-sampling/y2x2-1x4-1x1.jpg \
	tests/data/jpeg-sampling/y2x2-2x1-1x1.jpg \
	tests/data/jpeg-sampling/y3x1-1x1-1x1.jpg \
	tests/data/jpeg-sampling/y4x1-1x1-1x1.jpg
tests/data/jpeg_simd.log: tools/slimrun$(EXEEXT)
