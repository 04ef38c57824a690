# tests/runtime/: schedules, optimizers, event files and checkpoints through
# the C API (test_runtime); global-norm clipping, optimizer slots' initial
# values and the auxiliary-loss weight (test_train_opts); slimrun train/eval/run end to end, with a run
# killed and resumed, damaged checkpoints, a full disk and a new head
# (train_resume.sh, which uses ckpt_tool to compare checkpoints bit for bit).

check_PROGRAMS += tests/runtime/test_runtime tests/runtime/ckpt_tool tests/runtime/test_train_opts
tests_runtime_test_runtime_SOURCES = tests/runtime/test_runtime.c
tests_runtime_test_runtime_LDADD = libslim_core.la
tests_runtime_test_train_opts_SOURCES = tests/runtime/test_train_opts.c
tests_runtime_test_train_opts_LDADD = libslim_core.la
tests_runtime_ckpt_tool_SOURCES = tests/runtime/ckpt_tool.c
tests_runtime_ckpt_tool_LDADD = libslim_core.la
TESTS += tests/runtime/test_runtime tests/runtime/test_train_opts tests/runtime/train_resume.sh
EXTRA_DIST += tests/runtime/train_resume.sh tests/runtime/tiny.yaml
# train_resume.sh runs tools/slimrun and ckpt_tool
tests/runtime/train_resume.log: tools/slimrun$(EXEEXT) tests/runtime/ckpt_tool$(EXEEXT)
# faults.sh: kill -9 at random moments and around checkpoint writes, SIGINT/SIGTERM,
# a full disk (a tmpfs, as root), a bad train_dir, damaged records; short here
# (4 kills on LeNet), longer by hand: tests/runtime/faults.sh --kills=60 --steps=300
TESTS += tests/runtime/faults.sh
EXTRA_DIST += tests/runtime/faults.sh
tests/runtime/faults.log: tools/slimrun$(EXEEXT) tests/runtime/ckpt_tool$(EXEEXT)
# test_bench.sh: slimrun bench on LeNet (the report, the memory plan, usage errors)
TESTS += tests/runtime/test_bench.sh
EXTRA_DIST += tests/runtime/test_bench.sh
tests/runtime/test_bench.log: tools/slimrun$(EXEEXT)
# mpi_train.sh: training across processes with mpirun -np 2 (equivalence with
# one process, faults, resume, the trace); skipped without mpirun or MPI
TESTS += tests/runtime/mpi_train.sh
EXTRA_DIST += tests/runtime/mpi_train.sh tests/runtime/lsan-mpi.supp
tests/runtime/mpi_train.log: tools/slimrun$(EXEEXT) tests/runtime/ckpt_tool$(EXEEXT)
