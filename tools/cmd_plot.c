/* tools/cmd_plot.c - slimrun plot: pictures of training runs.
 *
 * Reads each TRAIN_DIR's metrics.jsonl (the training lines and the
 * evaluations made during training) and, when present, the eval.jsonl that
 * `slimrun eval --eval_dir=TRAIN_DIR` writes, and draws loss, accuracy,
 * learning rate, images/s and input wait against the step, every run in its
 * own colour, as a PNG or an SVG. The drawing is gnuplot's (Debian's
 * gnuplot-nox: axes, ticks, legends and both formats, as a program run in a
 * scratch directory with the data as files), so nothing here rasterizes. */
#include "tools/cli.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern const slim_command slim_cmd_plot;

typedef struct plot_cli {
    const char *out, *title, *gnuplot;
    int width, height;
} plot_cli;

#define PL(f) offsetof(plot_cli, f)
static const flag_def plot_flags[] = {
    {"out", FLAG_STR, PL(out), 0,
     "the picture: .png or .svg (default: TRAIN_DIR/metrics.png; ./metrics.png for several runs)"},
    {"title", FLAG_STR, PL(title), 0, "a title above the panels (default: the runs' names)"},
    {"width", FLAG_INT, PL(width), 0, "in pixels (1200)"},
    {"height", FLAG_INT, PL(height), 0, "in pixels (750)"},
    {"gnuplot", FLAG_STR, PL(gnuplot), 0, "the gnuplot program (default: gnuplot on the PATH)"},
};
#define N_PLOT_FLAGS ((int)(sizeof plot_flags / sizeof plot_flags[0]))

static const char plot_usage[] =
    "usage: slimrun plot TRAIN_DIR... [FLAGS]\n\n"
    "Draws each run's loss, accuracy, learning rate, images/s and input wait against the\n"
    "step (from its metrics.jsonl; evaluations during training and eval.jsonl as points),\n"
    "several runs overlaid, as a PNG or SVG. Draws with gnuplot (apt-get install gnuplot-nox).";

/* The number after "key": in a flat JSON object line, or NaN. */
static double json_num(const char *line, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return NAN;
    p += strlen(pat);
    while (*p == ' ')
        p++;
    char *end;
    double v = strtod(p, &end);
    return end == p || !isfinite(v) ? NAN : v;
}

static void put(FILE *f, double v)
{
    if (isnan(v))
        fputs(" ?", f);
    else
        fprintf(f, " %.9g", v);
}

/* DIR/metrics.jsonl into scratch/runK.dat (step loss accuracy lr images/s
 * input-wait%) and runK_eval.dat (step top-1 loss), with DIR/eval.jsonl's
 * evaluations. Returns the training lines found, or -1 (err set). */
static int convert_run(const char *dir, const char *scratch, int k, int *n_eval, char *err,
                       size_t en)
{
    char path[4200], out[4200], eout[4200];
    snprintf(out, sizeof out, "%s/run%d.dat", scratch, k);
    snprintf(eout, sizeof eout, "%s/run%d_eval.dat", scratch, k);
    FILE *o = fopen(out, "w"), *eo = fopen(eout, "w");
    if (!o || !eo) {
        snprintf(err, en, "cannot write in %s: %s", scratch, strerror(errno));
        if (o)
            fclose(o);
        if (eo)
            fclose(eo);
        return -1;
    }
    int n = 0;
    *n_eval = 0;
    bool any_file = false;
    for (int which = 0; which < 2; which++) {
        snprintf(path, sizeof path, "%s/%s", dir, which ? "eval.jsonl" : "metrics.jsonl");
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        any_file = true;
        char *line = NULL;
        size_t cap = 0;
        while (getline(&line, &cap, f) > 0) {
            double step = json_num(line, "step");
            if (isnan(step))
                continue;
            double top1 = json_num(line, which ? "top1" : "eval_top1");
            if (!isnan(top1)) {
                fprintf(eo, "%.0f", step);
                put(eo, top1);
                put(eo, json_num(line, which ? "loss" : "eval_loss"));
                fputc('\n', eo);
                (*n_eval)++;
            } else if (!which) {
                double wait = json_num(line, "input_wait");
                fprintf(o, "%.0f", step);
                put(o, json_num(line, "loss"));
                put(o, json_num(line, "accuracy"));
                put(o, json_num(line, "learning_rate"));
                put(o, json_num(line, "images_per_sec"));
                put(o, isnan(wait) ? wait : 100 * wait);
                fputc('\n', o);
                n++;
            }
        }
        free(line);
        fclose(f);
    }
    bool bad = ferror(o) | ferror(eo);
    bad |= fclose(o) != 0;
    bad |= fclose(eo) != 0;
    if (bad) {
        snprintf(err, en, "cannot write in %s", scratch);
        return -1;
    }
    if (!any_file) {
        snprintf(err, en, "%s has no metrics.jsonl (is it a --train_dir?)", dir);
        return -1;
    }
    return n;
}

/* s as a gnuplot single-quoted string ('' stands for a quote). */
static void gp_str(FILE *f, const char *s)
{
    fputc('\'', f);
    for (; *s; s++) {
        if (*s == '\'')
            fputc('\'', f);
        if ((unsigned char)*s >= 32)
            fputc(*s, f);
    }
    fputc('\'', f);
}

static const char *base_name(const char *dir, char *buf, size_t n)
{
    snprintf(buf, n, "%s", dir);
    size_t l = strlen(buf);
    while (l > 1 && buf[l - 1] == '/')
        buf[--l] = 0;
    const char *s = strrchr(buf, '/');
    return s && s[1] ? s + 1 : buf;
}

/* One panel: column col of every run's training data (and eval column ecol
 * of its evaluations when ecol > 0). */
static void panel(FILE *g, const char *title, const char *ylabel, int col, int ecol, int runs,
                  const int *n_eval, bool key, const char *const *names)
{
    fprintf(g, "set title '%s'\nset ylabel '%s'\n%s\nplot ", title, ylabel,
            key ? "set key top right" : "unset key");
    bool first = true;
    for (int k = 0; k < runs; k++) {
        fprintf(g, "%s'run%d.dat' using 1:%d with lines ls %d title ", first ? "" : ", ", k, col,
                k + 1);
        gp_str(g, names[k]);
        first = false;
        if (ecol > 0 && n_eval[k])
            fprintf(g,
                    ", 'run%d_eval.dat' using 1:%d with linespoints ls %d dt 2 pt 7 ps 0.6 "
                    "title 'eval'",
                    k, ecol, k + 1);
    }
    fputc('\n', g);
}

static int write_script(const char *scratch, const plot_cli *pc, const char *out, bool svg,
                        int runs, const int *n_eval, const char *const *names, char *err, size_t en)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/plot.gp", scratch);
    FILE *g = fopen(path, "w");
    if (!g) {
        snprintf(err, en, "cannot write %s: %s", path, strerror(errno));
        return -1;
    }
    int w = pc->width > 0 ? pc->width : 1200, h = pc->height > 0 ? pc->height : 750;
    if (svg)
        fprintf(g, "set terminal svg size %d,%d dynamic background '#ffffff' font 'sans,10'\n", w,
                h);
    else
        fprintf(g, "set terminal pngcairo size %d,%d font 'sans,9'\n", w, h);
    fputs("set output ", g);
    gp_str(g, out);
    fputs("\nset datafile missing '?'\nset termoption noenhanced\nset grid\n"
          "set xlabel 'step'\nset key noautotitle\n",
          g);
    /* the same colour for a run in every panel (gnuplot's default cycle) */
    static const char *const colours[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                          "#9467bd", "#8c564b", "#e377c2", "#17becf"};
    for (int k = 0; k < runs; k++)
        fprintf(g, "set style line %d lc rgb '%s' lw 1.5\n", k + 1, colours[k % 8]);
    fputs("set multiplot layout 2,3 title ", g);
    if (pc->title)
        gp_str(g, pc->title);
    else {
        char t[1024] = "";
        for (int k = 0; k < runs; k++) {
            size_t l = strlen(t);
            snprintf(t + l, sizeof t - l, "%s%s", k ? ", " : "", names[k]);
        }
        gp_str(g, t);
    }
    fputc('\n', g);
    panel(g, "loss", "cross entropy (+ regularization in training)", 2, 3, runs, n_eval, true,
          names);
    fputs("set yrange [0:1]\n", g);
    panel(g, "accuracy", "top-1 (training batches; eval)", 3, 2, runs, n_eval, false, names);
    fputs("set autoscale y\nset logscale y\n", g);
    panel(g, "learning rate", "learning rate", 4, 0, runs, n_eval, false, names);
    fputs("unset logscale y\nset yrange [0:*]\n", g);
    panel(g, "images/s", "images per second", 5, 0, runs, n_eval, false, names);
    fputs("set yrange [0:100]\n", g);
    panel(g, "input wait", "% of the step waiting for input", 6, 0, runs, n_eval, false, names);
    fputs("unset multiplot\nset output\n", g);
    bool bad = ferror(g) != 0;
    bad |= fclose(g) != 0;
    if (bad) {
        snprintf(err, en, "cannot write %s", path);
        return -1;
    }
    return 0;
}

/* gnuplot plot.gp in scratch, its messages into scratch/gnuplot.log. */
static int run_gnuplot(const char *prog, const char *scratch, char *err, size_t en)
{
    char log[4200];
    snprintf(log, sizeof log, "%s/gnuplot.log", scratch);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, en, "cannot start %s: %s", prog, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        if (chdir(scratch) != 0 || !freopen(log, "w", stderr) || !freopen("/dev/null", "r", stdin))
            _exit(126);
        execlp(prog, prog, "plot.gp", (char *)NULL);
        fprintf(stderr, "exec: %s", strerror(errno));
        _exit(127);
    }
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) {
            snprintf(err, en, "waiting for %s: %s", prog, strerror(errno));
            return -1;
        }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
        snprintf(err, en,
                 "slimrun plot draws with gnuplot, and '%s' could not be run: install it "
                 "(apt-get install gnuplot-nox) or name it with --gnuplot=PATH",
                 prog);
        return -1;
    }
    char msg[600] = "";
    FILE *f = fopen(log, "r");
    if (f) {
        size_t r = fread(msg, 1, sizeof msg - 1, f);
        msg[r] = 0;
        fclose(f);
        for (char *p = msg; *p; p++)
            if (*p == '\n')
                *p = ' ';
    }
    snprintf(err, en, "%s failed%s%s", prog, msg[0] ? ": " : "", msg);
    return -1;
}

static void remove_scratch(const char *scratch, int runs)
{
    char p[4200];
    const char *fixed[] = {"plot.gp", "gnuplot.log"};
    for (int i = 0; i < 2; i++) {
        snprintf(p, sizeof p, "%s/%s", scratch, fixed[i]);
        unlink(p);
    }
    for (int k = 0; k < runs; k++) {
        snprintf(p, sizeof p, "%s/run%d.dat", scratch, k);
        unlink(p);
        snprintf(p, sizeof p, "%s/run%d_eval.dat", scratch, k);
        unlink(p);
    }
    rmdir(scratch);
}

/* Draw the runs in dirs into out (.png or .svg). Returns 0, or 1 with err. */
static int plot_runs(const plot_cli *pc, const char *const *dirs, int n_dirs, const char *out,
                     char *err, size_t en)
{
    size_t ol = strlen(out);
    bool svg = ol > 4 && !strcmp(out + ol - 4, ".svg");
    if (!svg && !(ol > 4 && !strcmp(out + ol - 4, ".png"))) {
        snprintf(err, en, "--out=%s: the picture is a .png or an .svg file", out);
        return 2;
    }
    char abs_out[4200];
    if (out[0] == '/')
        snprintf(abs_out, sizeof abs_out, "%s", out);
    else {
        char cwd[4096];
        if (!getcwd(cwd, sizeof cwd)) {
            snprintf(err, en, "getcwd: %s", strerror(errno));
            return 1;
        }
        snprintf(abs_out, sizeof abs_out, "%s/%s", cwd, out);
    }
    const char *tmp = getenv("TMPDIR");
    char scratch[4096];
    snprintf(scratch, sizeof scratch, "%s/slimrun-plot.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (!mkdtemp(scratch)) {
        snprintf(err, en, "cannot make a scratch directory %s: %s", scratch, strerror(errno));
        return 1;
    }
    int n_eval[64] = {0}, rc = 1, runs = 0;
    char name_buf[64][256];
    const char *names[64];
    for (; runs < n_dirs; runs++) {
        int n = convert_run(dirs[runs], scratch, runs, &n_eval[runs], err, en);
        if (n < 0)
            goto done;
        if (n == 0 && n_eval[runs] == 0) {
            snprintf(err, en, "%s/metrics.jsonl has no steps yet", dirs[runs]);
            runs++;
            goto done;
        }
        names[runs] = base_name(dirs[runs], name_buf[runs], sizeof name_buf[runs]);
    }
    if (write_script(scratch, pc, abs_out, svg, runs, n_eval, names, err, en) ||
        run_gnuplot(pc->gnuplot ? pc->gnuplot : "gnuplot", scratch, err, en))
        goto done;
    struct stat sb;
    if (stat(abs_out, &sb) != 0 || sb.st_size == 0) {
        snprintf(err, en, "gnuplot wrote no %s", out);
        goto done;
    }
    rc = 0;
done:
    remove_scratch(scratch, runs);
    return rc;
}

int slim_cli_plot_train_dir(const char *train_dir, char *out, size_t out_n, char *err, size_t en)
{
    plot_cli pc = {0};
    snprintf(out, out_n, "%s/metrics.png", train_dir);
    return plot_runs(&pc, &train_dir, 1, out, err, en);
}

static int plot_main(int argc, char **argv)
{
    plot_cli pc = {0};
    flags_result fr;
    memset(&fr, 0, sizeof fr);
    char err[1024];
    if (flags_parse(plot_flags, N_PLOT_FLAGS, &pc, argc, argv, 1, &fr, err, sizeof err)) {
        fprintf(stderr, "slimrun plot: %s\n", err);
        return 2;
    }
    if (fr.help || fr.n_pos < 1) {
        flags_usage(fr.help ? stdout : stderr, plot_usage, plot_flags, N_PLOT_FLAGS);
        return fr.help ? 0 : 2;
    }
    if (fr.n_pos > 64) {
        fprintf(stderr, "slimrun plot: at most 64 runs in one picture\n");
        return 2;
    }
    char out[4200];
    if (pc.out)
        snprintf(out, sizeof out, "%s", pc.out);
    else if (fr.n_pos == 1)
        snprintf(out, sizeof out, "%s/metrics.png", fr.pos[0]);
    else
        snprintf(out, sizeof out, "metrics.png");
    int rc = plot_runs(&pc, fr.pos, fr.n_pos, out, err, sizeof err);
    if (rc) {
        fprintf(stderr, "slimrun plot: %s\n", err);
        return rc;
    }
    printf("wrote %s\n", out);
    return 0;
}

const slim_command slim_cmd_plot = {
    "plot", "draw training runs: loss, accuracy, learning rate, images/s (PNG or SVG)", plot_main};
