# tests/fuzz/build.mk - the clang build of the fuzz harnesses, run by
# tests/fuzz/fuzz.sh from the build directory:
#     make -f SRC/tests/fuzz/build.mk FUZZ_OUT=DIR FUZZ_NAMES="dsl jpeg" fuzz-build
# It includes the ordinary build's Makefile for the library's source list and
# flags (so a new source file or -D is picked up), and compiles every source
# again with clang -fsanitize=fuzzer-no-link,address,undefined into FUZZ_OUT/obj;
# FUZZ_OUT/bin/fuzz_NAME is harness tests/fuzz/NAME.c linked with libFuzzer.
include Makefile

FUZZ_OUT ?= fuzz-out
FUZZ_CC ?= clang
FUZZ_NAMES ?= $(basename $(notdir $(FUZZ_HARNESSES)))
FUZZ_SAN = -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_COMPILE = $(FUZZ_CC) $(DEFS) $(DEFAULT_INCLUDES) $(INCLUDES) $(AM_CPPFLAGS) $(CPPFLAGS) \
	-DSLIM_LIBFUZZER -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION -std=c11 -D_GNU_SOURCE -fno-math-errno -g -O1 $(FUZZ_SAN) \
	-fsanitize=fuzzer-no-link $(FUZZ_EXTRA) $(FUZZ_DEP_CFLAGS) -MMD -MP
# The libraries' flags as the library is built with them (AM_CFLAGS without
# slim's own optimization and warning flags; a new dependency, such as MPI's
# headers, comes along), and the library's link line.
FUZZ_DEP_CFLAGS = $(filter-out $(SLIM_CFLAGS),$(AM_CFLAGS))
FUZZ_LIBS = $(filter-out none required,$(libslim_core_la_LIBADD))
FUZZ_LIB_OBJS = $(patsubst %.c,$(FUZZ_OUT)/obj/%.o,\
	$(filter %.c,$(libslim_core_la_SOURCES) $(nodist_libslim_core_la_SOURCES)))
FUZZ_BINS = $(patsubst %,$(FUZZ_OUT)/bin/fuzz_%,$(FUZZ_NAMES))

# Per-pixel arithmetic (the recipe steps' loops and kernels): its
# comparisons are loop bounds and clamps, not input bytes, and tracing them
# for libFuzzer's comparison-guided mutations took 3/4 of the recipe
# harness's time. Its edges are still counted and ASan + UBSan still apply.
FUZZ_NO_TRACE_CMP = datasets/prep.c datasets/pixel.c
$(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(FUZZ_NO_TRACE_CMP)): FUZZ_EXTRA = -fno-sanitize-coverage=trace-cmp
$(patsubst %.c,$(FUZZ_OUT)/obj/%.o,$(FUZZ_NO_TRACE_CMP)): $(top_srcdir)/tests/fuzz/build.mk

fuzz-build: $(FUZZ_BINS)
.PHONY: fuzz-build

$(FUZZ_OUT)/bin/fuzz_%: $(FUZZ_OUT)/obj/tests/fuzz/%.o $(FUZZ_OUT)/obj/tests/fuzz/fuzz.o \
		$(FUZZ_LIB_OBJS)
	@mkdir -p $(@D)
	@echo "  CCLD     $@"
	@$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer $^ $(FUZZ_LIBS) -o $@

$(FUZZ_OUT)/obj/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC       $@"
	@$(FUZZ_COMPILE) -c $< -o $@

.SECONDARY:
-include $(FUZZ_LIB_OBJS:.o=.d) $(patsubst %,$(FUZZ_OUT)/obj/tests/fuzz/%.d,$(FUZZ_NAMES) fuzz)
