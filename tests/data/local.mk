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
