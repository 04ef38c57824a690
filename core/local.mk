# core/: what every layer uses and that knows no graph, op or program:
# error values and the log sink, reading a whole file, a name -> index map,
# the thread pool, BLIS's sgemm on one thread per call, and attributes
# (builders, and their resolution against an op's schema from <slim/op.h>),
# and the parameter initializers.
libslim_core_la_SOURCES += \
	core/error.c core/error.h \
	core/file.c core/file.h \
	core/names.c core/names.h \
	core/threadpool.c core/threadpool.h \
	core/gemm.c core/gemm.h \
	core/attrs.c core/attrs_build.c core/attrs.h \
	core/init.c core/init.h
