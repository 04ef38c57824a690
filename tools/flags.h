/* tools/flags.h - TF-Slim/absl-style command-line flags for slimrun's
 * train, eval, predict, run and profile commands:
 *   --name=value  --name value  --name (booleans: true)  --noname (false)
 * A value never starts with "--": `--name --other` is an error (or the bare
 * form of a FLAG_STR_BARE flag); `--name=--x` gives such a value.
 * described by a table of offsets into a config struct. Unknown flags are
 * errors that suggest the closest known name. */
#ifndef SLIM_TOOLS_FLAGS_H
#define SLIM_TOOLS_FLAGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef enum flag_type {
    FLAG_STR = 1,   /* const char * (points into argv or the run file's strings) */
    FLAG_INT,       /* int */
    FLAG_I64,       /* int64_t */
    FLAG_DBL,       /* double */
    FLAG_BOOL,      /* bool */
    FLAG_U64,       /* uint64_t */
    FLAG_NOTE,      /* accepted and ignored with a note (TF-Slim's distribution flags) */
    FLAG_NOTE_BOOL, /* the same for a TF-Slim boolean: --name alone is true, --noname false */
    FLAG_LIST,      /* const char *const * with an int count at off2 (repeatable: --plugin) */
    FLAG_DEFINES,   /* a FLAG_LIST of NAME=VALUE where a later NAME replaces an earlier (--set) */
    FLAG_STR_BARE,  /* a FLAG_STR that may be given alone: --name sets "" (the command's default) */
} flag_type;

typedef struct flag_def {
    const char *name;
    flag_type type;
    size_t off, off2;
    const char *help; /* "" hides the flag from --help */
} flag_def;

#define FLAGS_MAX_POS 64
#define FLAGS_MAX_LIST 16
#define FLAGS_MAX_LISTS 4 /* FLAG_LIST flags in one table */

typedef struct flags_result {
    int n_pos;
    const char *pos[FLAGS_MAX_POS];
    bool help;
    char notes[1024];    /* ignored flags, for the caller to print */
    char settings[8192]; /* "name=value\n" for every flag given, in order */
    const char *list[FLAGS_MAX_LISTS][FLAGS_MAX_LIST]; /* the FLAG_LIST flags' values */
} flags_result;

/* Parse argv[first..argc). Returns 0, or 2 with a message in err (usage error). */
int flags_parse(const flag_def *defs, int n_defs, void *base, int argc, char **argv, int first,
                flags_result *res, char *err, size_t err_size);
/* Does argument a look like a flag (so that it is never taken as the value
 * of the flag before it)? "--x", "--", "-h". */
bool flags_is_flag(const char *a);
/* Was this flag set by the last flags_parse into res? */
bool flags_given(const flags_result *res, const char *name);
void flags_usage(FILE *f, const char *usage, const flag_def *defs, int n_defs);

/* A YAML run file: a mapping of flag names to scalars (lists for repeatable
 * flags), with an optional `command:` (train, eval) and an optional `eval:`
 * mapping evaluated after training. Appends "--name=value" strings to argv
 * (malloc'ed, freed by runfile_free). Errors carry file:line:col. */
typedef struct runfile {
    char *command;
    int argc;
    char **argv; /* train (or eval) flags */
    int eval_argc;
    char **eval_argv; /* the eval: section */
    bool has_eval;
    char **where, **eval_where; /* "FILE:LINE:COL" of each argv / eval_argv entry */
    char command_where[600];    /* of the `command:` value */
} runfile;
int runfile_load(const char *path, runfile *rf, char *err, size_t err_size);
void runfile_free(runfile *rf);
/* "FILE:LINE:COL" of an argument a loaded run file holds (the pointer in its
 * argv or eval_argv), or NULL: flags_parse puts it before its errors. */
const char *runfile_where(const char *arg);
/* "FILE:LINE:COL" of the loaded run file entry an error message is about,
 * or NULL: the entry whose --name the message mentions, else the one whose
 * value (a path, a name) it quotes as a word, the longest such. */
const char *runfile_where_in(const char *msg);

#endif
