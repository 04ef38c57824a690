# slimrun train, eval, predict, run, profile, plot (runtime/ is the library side).
tools_slimrun_SOURCES += tools/cmd_train.c tools/cmd_eval.c tools/cmd_predict.c \
	tools/cmd_run.c tools/cmd_profile.c tools/cmd_plot.c
