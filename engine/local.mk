# engine/: the core (errors, attributes, registry and plugins, graph, compiler, executor).
libslim_core_la_SOURCES += \
	engine/error.c engine/error.h \
	engine/file.c engine/file.h \
	engine/attrs.c engine/attrs_build.c engine/attrs.h \
	engine/registry.c engine/registry.h \
	engine/gemm.c engine/gemm.h \
	engine/threadpool.c engine/threadpool.h \
	engine/oprun.c engine/oprun.h \
	engine/graph.c engine/graph.h \
	engine/names.c engine/names.h \
	engine/init.c \
	engine/compile.c engine/compile.h \
	engine/rewrite.c \
	engine/autodiff.c \
	engine/update.c \
	engine/steps.c \
	engine/plan.c \
	engine/exec.c engine/program.h
