# engine/: registry and plugins, graph, compiler, executor (over core/).
libslim_core_la_SOURCES += \
	engine/registry.c engine/registry.h \
	engine/node.c engine/node.h \
	engine/graph.c engine/graph.h \
	engine/compile.c engine/compile.h \
	engine/rewrite.c \
	engine/autodiff.c \
	engine/update.c \
	engine/steps.c \
	engine/plan.c \
	engine/exec.c engine/program.h
