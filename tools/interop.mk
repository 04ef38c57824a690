# slimrun import and predict --input_npy (interop/ is the library side).
tools_slimrun_SOURCES += tools/cmd_import.c tools/cmd_import.h
tools_slimrun_SOURCES += tools/cmd_export.c
