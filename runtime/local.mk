# runtime/: what a run needs around the core: the training loop, learning-rate
# schedules, optimizers, checkpoints, evaluation, metrics, TensorBoard event
# files, Chrome traces, and the single-op runner (op harness, conv_bench).
# checkpoint.pb-c.[ch] and tfevent.pb-c.[ch] are generated from the .proto
# files here by protoc-c.

RUNTIME_PB = runtime/checkpoint.pb-c.c runtime/checkpoint.pb-c.h \
	runtime/tfevent.pb-c.c runtime/tfevent.pb-c.h
EXTRA_DIST += runtime/checkpoint.proto runtime/tfevent.proto
BUILT_SOURCES += $(RUNTIME_PB)
CLEANFILES += $(RUNTIME_PB)

runtime/checkpoint.pb-c.c: $(top_srcdir)/runtime/checkpoint.proto
	$(AM_V_GEN)$(MKDIR_P) runtime && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/runtime --c_out=runtime \
	  $(top_srcdir)/runtime/checkpoint.proto
runtime/tfevent.pb-c.c: $(top_srcdir)/runtime/tfevent.proto
	$(AM_V_GEN)$(MKDIR_P) runtime && \
	$(PROTOC_C) --proto_path=$(top_srcdir)/runtime --c_out=runtime \
	  $(top_srcdir)/runtime/tfevent.proto
# One protoc-c run writes both files (Automake manual, "Multiple Outputs").
runtime/checkpoint.pb-c.h: runtime/checkpoint.pb-c.c
	@test -f $@ || { rm -f runtime/checkpoint.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) runtime/checkpoint.pb-c.c; }
runtime/tfevent.pb-c.h: runtime/tfevent.pb-c.c
	@test -f $@ || { rm -f runtime/tfevent.pb-c.c && \
	  $(MAKE) $(AM_MAKEFLAGS) runtime/tfevent.pb-c.c; }

nodist_libslim_core_la_SOURCES += $(RUNTIME_PB)
libslim_core_la_SOURCES += \
	runtime/checkpoint.c runtime/checkpoint.h \
	runtime/ckpt_reader.c runtime/ckpt_reader.h runtime/ckpt_slim.c runtime/ckpt_open.c \
	runtime/ckpt_restore.c runtime/ckpt_restore.h runtime/ckpt_save_tf.c \
	runtime/ckpt_convert.c runtime/ckpt_convert.h
pkginclude_HEADERS += include/slim/train.h
libslim_core_la_SOURCES += \
	runtime/schedule.c runtime/schedule.h \
	runtime/report.c runtime/report.h \
	runtime/session.c runtime/session.h \
	runtime/train.c runtime/train_loop.c runtime/train_internal.h \
	runtime/eval.c runtime/profile.c \
	runtime/oprun.c runtime/oprun.h
# Training across processes: the communicator over MPI when configure found
# it, else the one-process world (no MPI symbol in the build).
libslim_core_la_SOURCES += runtime/dist.h runtime/dist_common.c
DIST_MPI = runtime/dist_mpi.c runtime/dist_mpi.h runtime/dist_mpi_comm.c
if HAVE_MPI
libslim_core_la_SOURCES += $(DIST_MPI)
EXTRA_DIST += runtime/dist_local.c
else
libslim_core_la_SOURCES += runtime/dist_local.c
EXTRA_DIST += $(DIST_MPI)
endif
