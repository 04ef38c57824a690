# slimrun bench: training and inference throughput of a model on random input.
tools_slimrun_SOURCES += tools/cmd_bench.c
