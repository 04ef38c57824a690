# bench/: benchmarks (not tests). `make bench` builds them; bench/run.sh builds
# and runs them side by side with the PyTorch anchors and writes
# bench/results/latest.md (see bench/README.md).
EXTRA_PROGRAMS = bench/lenet_fmnist bench/conv_bench bench/train_step
bench_lenet_fmnist_SOURCES = bench/lenet_fmnist.c
bench_lenet_fmnist_LDADD = libslim_core.la
bench_conv_bench_SOURCES = bench/conv_bench.c
bench_conv_bench_LDADD = libslim_core.la
bench_train_step_SOURCES = bench/train_step.c
bench_train_step_LDADD = libslim_core.la
CLEANFILES += $(EXTRA_PROGRAMS)
# A link with a delay for bench/mpi_netns.sh on kernels without netem.
EXTRA_PROGRAMS += bench/delayline
bench_delayline_SOURCES = bench/delayline.c
EXTRA_DIST += bench/run.sh bench/README.md bench/benchutil.h bench/torch_anchor.py \
	bench/fmnist_compare.sh bench/torch_fmnist.py bench/ab.sh

bench: $(EXTRA_PROGRAMS)
.PHONY: bench

# The input pipeline (datasets/): see the header of bench/pipeline_bench.c.
EXTRA_PROGRAMS += bench/pipeline_bench
bench_pipeline_bench_SOURCES = bench/pipeline_bench.c
bench_pipeline_bench_LDADD = libslim_core.la
