# slimrun ckpt: ls, diff, convert (runtime/ckpt_reader.c and interop/ do the work).
tools_slimrun_SOURCES += tools/cmd_ckpt.c
