# datasets/: record formats (TFRecord, tf.train.Example), image decoding, the
# preprocessing recipes' executor, the input pipeline, dataset descriptions
# and converters. See.
libslim_core_la_SOURCES += datasets/idx.c datasets/idx.h
pkginclude_HEADERS += include/slim/data.h

libslim_core_la_SOURCES += \
	datasets/crc32c.c datasets/crc32c.h \
	datasets/tfrecord.c datasets/tfrecord.h \
	datasets/example.c \
	datasets/image.c datasets/image.h datasets/png.c \
	datasets/jpeg_index.c datasets/jpeg_index.h \
	datasets/yamltree.c datasets/yamltree.h \
	datasets/recipe.c datasets/prep.h \
	datasets/prep.c datasets/pixel.c datasets/bbox.c \
	datasets/dataset.c datasets/dataset.h \
	datasets/pipeline.c datasets/pipeline.h datasets/sequence.c datasets/listdir.c datasets/listdir.h \
	datasets/convert.c datasets/convert.h datasets/convert_raw.c datasets/convert_records.c
EXTRA_DIST += datasets/example.proto

# example.pb-c.[ch] are generated from datasets/example.proto by protoc-c.
DATASETS_PB = datasets/example.pb-c.c datasets/example.pb-c.h
nodist_libslim_core_la_SOURCES += $(DATASETS_PB)
BUILT_SOURCES += $(DATASETS_PB)
CLEANFILES += $(DATASETS_PB)
datasets/example.pb-c.c: $(top_srcdir)/datasets/example.proto
	$(AM_V_GEN)$(MKDIR_P) datasets && \
	$(PROTOC_C) --proto_path=$(top_srcdir) --c_out=. $(top_srcdir)/datasets/example.proto
# One protoc-c run writes both files (Automake manual, "Multiple Outputs").
datasets/example.pb-c.h: datasets/example.pb-c.c
	@test -f $@ || { rm -f datasets/example.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) datasets/example.pb-c.c; }

# The preprocessing recipes: found by name in the source tree (uninstalled
# runs and tests), then in $(pkgdatadir)/pipelines.
AM_CPPFLAGS += -DSLIM_SOURCE_PIPELINES='"$(abs_top_srcdir)/models/pipelines"' \
	-DSLIM_INSTALLED_PIPELINES='"$(pkgdatadir)/pipelines"'
pipelinesdir = $(pkgdatadir)/pipelines
dist_pipelines_DATA = models/pipelines/inception.yaml models/pipelines/vgg.yaml \
	models/pipelines/cifarnet.yaml models/pipelines/lenet.yaml models/pipelines/torchvision.yaml
