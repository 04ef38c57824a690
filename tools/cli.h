/* tools/cli.h - what slimrun's commands share: signals, messages and progress
 * lines on stderr, the evaluation report, number formatting, and the train
 * and eval entry points that `slimrun run` calls. Each command lives in its
 * own tools/cmd_*.c (see tools/commands.def). */
#ifndef SLIM_TOOLS_CLI_H
#define SLIM_TOOLS_CLI_H

#include "tools/cmd.h"
#include "tools/flags.h"

#include <signal.h>
#include <slim/train.h>

/* ---- signals (cli.c) ---------------------------------------------------------- */

/* Set by SIGINT/SIGTERM: the loops stop after the current step and save. */
extern volatile int slim_cli_stop;
/* Catch SIGINT/SIGTERM (the second one quits at once); ignore SIGXFSZ. */
void slim_cli_signals(void);
/* The last step done (training sets it): the stop message names the next. */
extern volatile int64_t slim_cli_last_step;

/* ---- output on stderr/stdout (cli.c) ------------------------------------------ */

/* Colour: on when fd is a terminal, NO_COLOR is unset (or empty) and TERM is
 * not "dumb". slim_cli_sgr gives the escape sequence for an SGR code ("1;31":
 * bold red, "0": reset) when fd has colour, else "". */
bool slim_cli_colour(int fd);
const char *slim_cli_sgr(int fd, const char *code);
/* "slimrun CMD: MSG" on stderr, the "slimrun CMD:" in red on a colour terminal;
 * under slimrun run, MSG is preceded by the run file's FILE:LINE:COL of the
 * entry it is about (runfile_where_in). slim_cli_errorf formats MSG. */
void slim_cli_error(const char *cmd, const char *msg);
void slim_cli_errorf(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The library's log callback: "warning: ", "error: " prefixes on stderr. */
void slim_cli_message(int level, const char *msg, void *user);
/* A progress line on stderr: redrawn in place on a terminal, one line each
 * otherwise. Anything else printed (slim_cli_message, slim_cli_print_eval,
 * slim_cli_end_line) first ends it with a newline. */
void slim_cli_status_line(const char *text);
void slim_cli_end_line(void);
/* The on_eval callback: accuracy, recall@5 and loss on stdout; user, when not
 * NULL, points to an int detail (1: per-class accuracy, 2: and the confusion
 * matrix). */
void slim_cli_print_eval(const slim_eval_result *r, void *user);

/* The notes of flags_parse (ignored flags), "note: " before each line, on stderr. */
void slim_cli_print_notes(const char *notes);
/* "1h02m", "3m05s", "12s" ("?" when s < 0) into buf. */
const char *slim_cli_duration(char *buf, size_t n, double s);
/* Bytes as "512 B", "1.5 MiB", ... into buf. */
const char *slim_cli_bytes(char *buf, size_t n, double bytes);

/* ---- the model a checkpoint was trained as (cli.c) ---------------------------- */

/* What predict and export build from a checkpoint: model (NULL: the one info
 * names) and, when it is that model (by name or real path) and no --set was
 * given, the checkpoint's --set overrides (info->defines split in place; the
 * pointers in t). Returns t->model, NULL when neither names a model. */
typedef struct slim_cli_trained {
    const char *model;
    const char *const *defines;
    int n_defines;
    const char *split[32];
} slim_cli_trained;
const char *slim_cli_as_trained(slim_checkpoint_info *info, const char *model,
                                const char *const *defines, int n_defines, slim_cli_trained *t);

/* ---- train and eval from the command line (cmd_train.c, cmd_eval.c) ----------- */

/* Train from argv[first..]; pre/pre_n: flags from a run file, parsed first so
 * that the command line overrides them. *out_cfg (when not NULL) receives the
 * configuration used (its run_config and plugins are gone after the return;
 * its other strings point into argv and pre). Returns the process exit code. */
int slim_cli_train(int argc, char **argv, int first, char **pre, int pre_n,
                   slim_train_config *out_cfg);
/* slimrun train's flags into a configuration (for train and profile). */
typedef struct slim_cli_train_args {
    slim_train_config c;
    int steps, warmup;     /* profile: steps timed, steps run first */
    int eval_detail;       /* user data of c.on_eval */
    flags_result flags;    /* c.run_config and c.plugins point into it */
    const char *on_error;  /* --on_error: fail | skip (c.skip_damaged) */
    bool plot;             /* --plot: slimrun plot of the run at the end */
    char trace_path[4200]; /* --trace alone: TRAIN_DIR/trace.json */
} slim_cli_train_args;
/* Parse the train flags (pre first, then argv[first..]) into *ta and set its
 * callbacks and signal handling. cmd names the command in messages; usage and
 * more_help (may be NULL: flags after the table) make its --help. Returns -1
 * to go on, else the exit code (0 after --help, 2 on a usage error). */
int slim_cli_train_args_parse(slim_cli_train_args *ta, const char *cmd, const char *usage,
                              void (*more_help)(void), int argc, char **argv, int first, char **pre,
                              int pre_n);
/* slimrun plot of one run into train_dir/metrics.png (its path in out):
 * 0, or non-zero with a message in err (cmd_plot.c). */
int slim_cli_plot_train_dir(const char *train_dir, char *out, size_t out_n, char *err, size_t en);

/* Evaluate from argv[first..] after pre (run files). */
int slim_cli_eval(int argc, char **argv, int first, char **pre, int pre_n);

#endif
