# tests/: the op harness, engine tests, the plugin tests, end-to-end runs.
# Test programs link libslim_core.la (static, so internal symbols are reachable).

# The op harness: each tests/ops/cases_*.c registers its family of cases
# (test_ops runs them in this order).
check_PROGRAMS += tests/ops/test_ops
tests_ops_test_ops_SOURCES = tests/ops/test_ops.c tests/ops/harness.c tests/ops/harness.h \
	tests/ops/cases.h \
	tests/ops/cases_conv.c \
	tests/ops/cases_conv_kernels.c \
	tests/ops/cases_conv_chain.c \
	tests/ops/cases_pool.c \
	tests/ops/cases_fc.c \
	tests/ops/cases_batch_norm.c \
	tests/ops/cases_activation.c \
	tests/ops/cases_softmax.c \
	tests/ops/cases_elementwise.c \
	tests/ops/cases_shape.c \
	tests/ops/cases_dropout.c \
	tests/ops/cases_lrn.c \
	tests/ops/cases_loss.c \
	tests/ops/cases_optim.c \
	tests/ops/cases_optim_adaptive.c \
	tests/ops/cases_transpose.c \
	tests/ops/cases_reduce.c \
	tests/ops/cases_layer_norm.c \
	tests/ops/cases_grad.c
tests_ops_test_ops_LDADD = libslim_core.la
TESTS += tests/ops/test_ops

# The example plugin and three broken builds of it (wrong ABI, no init symbol,
# a name that clashes with a built-in op), for the loader's messages.
check_LTLIBRARIES += plugins/swish.la plugins/swish_badabi.la plugins/swish_noinit.la \
	plugins/swish_dup.la
PLUGIN_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
plugins_swish_la_SOURCES = plugins/swish.c
plugins_swish_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_swish_la_LIBADD = -lm
plugins_swish_badabi_la_SOURCES = plugins/swish.c
plugins_swish_badabi_la_CPPFLAGS = $(AM_CPPFLAGS) -DSWISH_BROKEN_ABI
plugins_swish_badabi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_swish_noinit_la_SOURCES = plugins/swish.c
plugins_swish_noinit_la_CPPFLAGS = $(AM_CPPFLAGS) -DSWISH_NO_INIT
plugins_swish_noinit_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_swish_dup_la_SOURCES = plugins/swish.c
plugins_swish_dup_la_CPPFLAGS = $(AM_CPPFLAGS) -DSWISH_DUPLICATE
plugins_swish_dup_la_LDFLAGS = $(PLUGIN_LDFLAGS)

check_PROGRAMS += tests/engine/test_plugin
tests_engine_test_plugin_SOURCES = tests/engine/test_plugin.c tests/ops/harness.c tests/ops/harness.h
tests_engine_test_plugin_LDADD = libslim_core.la
TESTS += tests/engine/test_plugin

check_PROGRAMS += tests/engine/test_rewrite
tests_engine_test_rewrite_SOURCES = tests/engine/test_rewrite.c tests/ops/harness.c tests/ops/harness.h
tests_engine_test_rewrite_LDADD = libslim_core.la
TESTS += tests/engine/test_rewrite

check_PROGRAMS += tests/engine/test_graph
tests_engine_test_graph_SOURCES = tests/engine/test_graph.c tests/ops/harness.c tests/ops/harness.h
tests_engine_test_graph_LDADD = libslim_core.la
TESTS += tests/engine/test_graph

check_PROGRAMS += tests/engine/test_attrs
tests_engine_test_attrs_SOURCES = tests/engine/test_attrs.c tests/ops/harness.c tests/ops/harness.h
tests_engine_test_attrs_LDADD = libslim_core.la
TESTS += tests/engine/test_attrs

# TAP helpers the shell tests source (ok, not_ok, check, tap_end)
EXTRA_DIST += tests/tap.sh

# Every C file as clang-format 14 writes it (skipped without clang-format 14;
# `make format` rewrites them): make format-check, and a test of make check.
TESTS += tests/format.sh
EXTRA_DIST += tests/format.sh
# every relative link of the Markdown documentation resolves (file and anchor)
TESTS += tests/doc_links.sh
EXTRA_DIST += tests/doc_links.sh

# No call cycle between files: nm over every object of the build (the
# library's, the tools', the tests'), then cycle detection; `tests/callgraph.sh
# --edges` prints the file-level graph.
TESTS += tests/callgraph.sh
EXTRA_DIST += tests/callgraph.sh

# Every test program under valgrind (memcheck, leaks). valgrind 3.19 does not
# decode every instruction -march=native may emit: configure with
# --with-arch=x86-64-v3 for this target. libjpeg-turbo runs its C code
# (JSIMD_FORCENONE=1): its SIMD colour conversion reads row padding nothing
# wrote, and memcheck then reports some files' pixels (4:4:0, 4:2:2 at 1/4
# scale) as uninitialised; tests/data/jpeg_simd.sh shows they are the C
# code's and do not depend on the heap, so the report is a false positive.
check-valgrind: $(check_PROGRAMS) $(check_LTLIBRARIES)
	@fail=0; for t in $(TESTS); do \
	  case $$t in *.sh) echo "skip $$t (a shell script: valgrind would check the shell)"; continue;; esac; \
	  echo "valgrind $$t"; \
	  JSIMD_FORCENONE=1 top_builddir=$(top_builddir) top_srcdir=$(top_srcdir) $(LIBTOOL) --mode=execute \
	    valgrind -q --error-exitcode=9 --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
	    ./$$t > $$t.valgrind.log 2>&1; rc=$$?; \
	  if [ $$rc -ne 0 ] && [ $$rc -ne 77 ]; then echo "FAIL $$t (see $$t.valgrind.log)"; fail=1; fi; \
	done; exit $$fail
.PHONY: check-valgrind
include tests/runtime/local.mk
include tests/data/local.mk
include tests/dsl/local.mk
include tests/fuzz/local.mk
include tests/interop/local.mk
