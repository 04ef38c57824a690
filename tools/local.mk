# tools/: slimrun. The dispatcher, what the commands share (cli.c, flags.c)
# and the commands every build has are here; the other commands' sources are
# added by their own fragment (tools/*.mk), owned by the module behind them.
bin_PROGRAMS += tools/slimrun
tools_slimrun_SOURCES = tools/slimrun.c tools/cmd.h tools/commands.def \
	tools/cli.c tools/cli.h tools/flags.c tools/flags.h tools/measure.h \
	tools/cmd_ops.c
tools_slimrun_LDADD = libslim_core.la

# docs/cli.md, the command-line reference, is `slimrun CMD --help` made
# Markdown (tools/cli_md.sh): `make cli-reference` rewrites it, the test
# fails when it differs from the binary's --help.
TESTS += tests/tools/cli_reference.sh
EXTRA_DIST += tests/tools/cli_reference.sh tools/cli_md.sh
cli-reference: tools/slimrun$(EXEEXT)
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/tools/cli_md.sh ./tools/slimrun$(EXEEXT) > $(top_srcdir)/docs/cli.md.tmp && \
	  mv $(top_srcdir)/docs/cli.md.tmp $(top_srcdir)/docs/cli.md
readme-flags: cli-reference
.PHONY: cli-reference readme-flags
# slimrun.1: the --help texts through help2man (tools/man.sh adds every
# command's), built and installed when configure found help2man.
EXTRA_DIST += tools/man.sh
if HAVE_HELP2MAN
man1_MANS = tools/slimrun.1
CLEANFILES += tools/slimrun.1 tools/slimrun.h2m
tools/slimrun.1: tools/slimrun$(EXEEXT) $(top_srcdir)/tools/man.sh
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/tools/man.sh ./tools/slimrun$(EXEEXT) > tools/slimrun.h2m && \
	  $(HELP2MAN) --no-info --section=1 --include=tools/slimrun.h2m \
	    --name='train, evaluate and run image classifiers (TF-Slim in C)' \
	    --output=$@ ./tools/slimrun$(EXEEXT)
endif

# What a new user hit (issue 31): flags, --set, messages, convert (TAP).
TESTS += tests/tools/newcomer.sh
EXTRA_DIST += tests/tools/newcomer.sh
tests/tools/newcomer.log: tools/slimrun$(EXEEXT)

include tools/inspect.mk
include tools/interop.mk
include tools/data.mk
include tools/train.mk
include tools/bench.mk
include tools/ckpt.mk
