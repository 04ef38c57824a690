/* tools/cli.c - what slimrun's commands share (see cli.h). */
#include "tools/cli.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- signals ------------------------------------------------------------------ */

volatile int slim_cli_stop;
volatile int64_t slim_cli_last_step = -1;
static char stop_msg[200] = "\nslimrun: stopping after this step (a checkpoint is saved); "
                            "send the signal again to quit at once\n";
static char stop_who[64]; /* across processes: "slimrun (rank 1 of 4" */

static void on_signal(int sig)
{
    if (slim_cli_stop) { /* a second one: leave now */
        signal(sig, SIG_DFL);
        raise(sig);
        return;
    }
    slim_cli_stop = sig;
    if (stop_who[0]) { /* "..., in step N)" in async-signal-safe pieces */
        char num[24], *p = num + sizeof num;
        int64_t v = slim_cli_last_step + 1;
        *--p = 0;
        do
            *--p = (char)('0' + v % 10);
        while ((v /= 10) > 0 && p > num);
        ssize_t w = write(2, stop_who, strlen(stop_who));
        w = write(2, ", in step ", 10);
        w = write(2, p, strlen(p));
        w = write(2, ")", 1);
        (void)w;
    }
    ssize_t w = write(2, stop_msg, strlen(stop_msg));
    (void)w;
}

void slim_cli_signals(void)
{
    int size, rank = slim_dist_launcher_rank(&size);
    if (rank >= 0 && size > 1) { /* every process stops after the same step */
        snprintf(stop_who, sizeof stop_who, "\nslimrun (rank %d of %d", rank, size);
        snprintf(stop_msg, sizeof stop_msg,
                 ": stopping after this step, all %d processes (rank 0 saves a checkpoint); send "
                 "the signal again to quit at once\n",
                 size);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* over a file-size limit, writes fail with EFBIG (reported, the previous
     * checkpoint kept) instead of the process being killed */
    signal(SIGXFSZ, SIG_IGN);
}

/* ---- output ------------------------------------------------------------------- */

bool slim_cli_colour(int fd)
{
    const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
    return isatty(fd) && !(nc && nc[0]) && !(term && !strcmp(term, "dumb"));
}

const char *slim_cli_sgr(int fd, const char *code)
{
    static char buf[4][24];
    static int next;
    if (!slim_cli_colour(fd))
        return "";
    char *b = buf[next++ & 3]; /* a few in one printf */
    snprintf(b, sizeof buf[0], "\033[%sm", code);
    return b;
}

void slim_cli_error(const char *cmd, const char *msg)
{
    slim_cli_end_line();
    const char *w = runfile_where_in(msg); /* slimrun run: the line the error is about */
    if (w && strstr(msg, w))
        w = NULL;
    fprintf(stderr, "%sslimrun %s:%s %s%s%s\n", slim_cli_sgr(2, "1;31"), cmd, slim_cli_sgr(2, "0"),
            w ? w : "", w ? ": " : "", msg);
}

void slim_cli_errorf(const char *cmd, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    slim_cli_error(cmd, msg);
}

static bool tty_line; /* a progress line without its newline is on stderr */

void slim_cli_end_line(void)
{
    if (tty_line) {
        fputc('\n', stderr);
        tty_line = false;
    }
}

void slim_cli_status_line(const char *text)
{
    bool tty = isatty(2);
    fprintf(stderr, "%s%s%s", tty ? "\r" : "", text, tty ? "\033[K" : "\n");
    tty_line = tty;
    fflush(stderr);
}

void slim_cli_message(int level, const char *msg, void *user)
{
    (void)user;
    slim_cli_end_line();
    const char *tag = level == SLIM_LOG_WARN    ? "warning:"
                      : level == SLIM_LOG_ERROR ? "error:"
                                                : NULL;
    if (tag)
        fprintf(stderr, "%s%s%s %s\n", slim_cli_sgr(2, level == SLIM_LOG_WARN ? "1;33" : "1;31"),
                tag, slim_cli_sgr(2, "0"), msg);
    else
        fprintf(stderr, "%s\n", msg);
}

void slim_cli_print_notes(const char *notes)
{
    for (const char *l = notes; l && *l;) {
        const char *end = strchr(l, '\n');
        int len = end ? (int)(end - l) : (int)strlen(l);
        fprintf(stderr, "note: %.*s\n", len, l);
        l = end ? end + 1 : NULL;
    }
}

const char *slim_cli_duration(char *buf, size_t n, double s)
{
    if (s < 0) {
        snprintf(buf, n, "?");
        return buf;
    }
    long t = (long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, n, "%ldh%02ldm", t / 3600, t / 60 % 60);
    else if (t >= 60)
        snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
    else
        snprintf(buf, n, "%lds", t);
    return buf;
}

const char *slim_cli_bytes(char *buf, size_t n, double bytes)
{
    const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", bytes, unit[u]);
    return buf;
}

void slim_cli_print_eval(const slim_eval_result *r, void *user)
{
    int detail = user ? *(const int *)user : 0;
    slim_cli_end_line();
    if (r->global_step >= 0)
        printf("step %lld: ", (long long)r->global_step);
    /* top-5 of 5 classes or fewer is every example: not shown */
    char top5[48] = "";
    if (r->num_classes > 5)
        snprintf(top5, sizeof top5, "  eval/Recall_5 %.4f", r->top5);
    printf("eval/Accuracy %s%.4f%s%s  loss %.4f  (%lld images, %.1f s%s)\n",
           slim_cli_sgr(1, "1;32"), r->top1, slim_cli_sgr(1, "0"), top5, r->loss,
           (long long)r->n_examples, r->seconds, r->used_ema ? ", moving averages" : "");
    if (detail >= 1 && r->class_total) {
        printf("per-class accuracy:\n");
        for (int k = 0; k < r->num_classes; k++) {
            const char *nm = r->label_names && r->label_names[k] ? r->label_names[k] : NULL;
            if (!r->class_total[k])
                continue;
            printf("  %4d %-24s %6.2f%%  (%lld/%lld)\n", k, nm ? nm : "",
                   100.0 * (double)r->class_correct[k] / (double)r->class_total[k],
                   (long long)r->class_correct[k], (long long)r->class_total[k]);
        }
    }
    if (detail >= 2 && r->confusion && r->num_classes <= 100) {
        int K = r->num_classes;
        printf("confusion matrix (rows: true class, columns: predicted):\n      ");
        for (int j = 0; j < K; j++)
            printf("%6d", j);
        printf("\n");
        for (int i = 0; i < K; i++) {
            printf("%6d", i);
            for (int j = 0; j < K; j++)
                printf("%6lld", (long long)r->confusion[(size_t)i * (size_t)K + (size_t)j]);
            printf("\n");
        }
    }
    fflush(stdout);
}

const char *slim_cli_as_trained(slim_checkpoint_info *info, const char *model,
                                const char *const *defines, int n_defines, slim_cli_trained *t)
{
    bool same = !model || !strcmp(model, info->model_name);
    char real[4096];
    if (!same && realpath(model, real))
        same = !strcmp(real, info->model_name);
    t->model = model ? model : info->model_name[0] ? info->model_name : NULL;
    t->defines = defines;
    t->n_defines = n_defines;
    if (!n_defines && same && info->defines[0]) {
        int n = 0;
        for (char *save = NULL, *s = strtok_r(info->defines, "\n", &save); s && n < 32;
             s = strtok_r(NULL, "\n", &save))
            t->split[n++] = s;
        t->defines = t->split;
        t->n_defines = n;
    }
    return t->model;
}
