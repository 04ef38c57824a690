# tools/: slimrun. Each command's sources are added by its own fragment
# (tools/*.mk), owned by the module that implements it.
bin_PROGRAMS += tools/slimrun
tools_slimrun_SOURCES = tools/slimrun.c tools/cmd.h tools/commands.def tools/cmd_ops.c
tools_slimrun_LDADD = libslim_core.la
include tools/inspect.mk
include tools/data.mk
include tools/train.mk
include tools/bench.mk
