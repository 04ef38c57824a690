/* runtime/report.c - TensorBoard event files, JSON lines, Chrome traces.
 *
 * Event files are TFRecord files of tensorflow.Event messages
 * (tensorflow/core/util/event.proto): the first event carries
 * file_version "brain.Event:2", each later one a Summary of scalar values
 * (simple_value). The subset of the messages with TensorFlow's field numbers
 * is runtime/tfevent.proto. Named events.out.tfevents.<seconds>.<host> as
 * TensorFlow's EventFileWriter does, so TensorBoard finds them.
 *
 * Traces are the Trace Event Format's JSON object form: "X" (complete)
 * events with microsecond ts/dur, "M" thread_name metadata, "C" counters.
 */
#include "runtime/report.h"

#include "core/error.h"
#include "runtime/tfevent.pb-c.h"

#include <slim/data.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

double slim__rt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double wall_time(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* ---- whole writes ------------------------------------------------------------------ */

/* n bytes appended to fd (opened O_APPEND) whole, or nothing: a short write
 * (a full disk, a file-size limit) is cut off again, so the file ends at
 * the last whole line or record. */
static slim_status append_whole(int fd, const char *path, const void *data, size_t n,
                                slim_error *err)
{
    struct stat sb;
    off_t before = fstat(fd, &sb) == 0 ? sb.st_size : -1;
    size_t done = 0;
    while (done < n) {
        ssize_t k = write(fd, (const char *)data + done, n - done);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            int e = k < 0 ? errno : ENOSPC;
            if (done && before >= 0 && ftruncate(fd, before) != 0)
                return slim__error(err, SLIM_EIO,
                                   "%s: write failed (%s) and its last %zu bytes "
                                   "could not be cut off: %s",
                                   path, strerror(e), done, strerror(errno));
            return slim__error(err, SLIM_EIO, "%s: write failed: %s", path, strerror(e));
        }
        done += (size_t)k;
    }
    return SLIM_OK;
}

/* ---- TensorBoard -------------------------------------------------------------- */

/* The file is made with its first event (file_version) at the first write
 * that succeeds: a full disk leaves no file behind, and a later write
 * (after space came back) starts it. */
struct slim__rt_events {
    char dir[1024];
    char path[1200]; /* "" until made */
    int fd;
};

static void put_le(uint8_t *p, uint64_t v, int n)
{
    for (int i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static slim_status write_event(slim__rt_events *e, const Slimtb__Event *ev, slim_error *err)
{
    /* One TFRecord: length, masked CRC of the length, the Event, masked CRC. */
    size_t n = protobuf_c_message_get_packed_size(&ev->base);
    uint8_t small[1024], *buf = n + 16 <= sizeof small ? small : malloc(n + 16);
    if (!buf)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    put_le(buf, n, 8);
    put_le(buf + 8, slim_crc32c_mask(slim_crc32c(0, buf, 8)), 4);
    protobuf_c_message_pack(&ev->base, buf + 12);
    put_le(buf + 12 + n, slim_crc32c_mask(slim_crc32c(0, buf + 12, n)), 4);
    slim_status st = append_whole(e->fd, e->path, buf, n + 16, err);
    if (buf != small)
        free(buf);
    return st;
}

static slim_status events_start(slim__rt_events *e, slim_error *err)
{
    char host[256] = "localhost";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = 0;
    double now = wall_time();
    /* a new file: a second run in the same second gets its own (.PID) */
    snprintf(e->path, sizeof e->path, "%s/events.out.tfevents.%lld.%s", e->dir, (long long)now,
             host);
    e->fd = open(e->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (e->fd < 0 && errno == EEXIST) {
        snprintf(e->path, sizeof e->path, "%s/events.out.tfevents.%lld.%s.%ld", e->dir,
                 (long long)now, host, (long)getpid());
        e->fd = open(e->path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    }
    if (e->fd < 0) {
        slim_status st =
            slim__error(err, SLIM_EIO, "%s: cannot create: %s", e->path, strerror(errno));
        e->path[0] = 0;
        return st;
    }
    Slimtb__Event ev = SLIMTB__EVENT__INIT;
    ev.has_wall_time = true;
    ev.wall_time = now;
    ev.has_step = true;
    ev.step = 0;
    ev.file_version = "brain.Event:2";
    slim_status st = write_event(e, &ev, err);
    if (st) { /* no empty file left behind */
        close(e->fd);
        unlink(e->path);
        e->fd = -1;
        e->path[0] = 0;
    }
    return st;
}

slim__rt_events *slim__rt_events_new(const char *dir)
{
    slim__rt_events *e = calloc(1, sizeof *e);
    if (e) {
        snprintf(e->dir, sizeof e->dir, "%s", dir);
        e->fd = -1;
    }
    return e;
}

slim_status slim__rt_events_scalars(slim__rt_events *e, int64_t step, const char *const *tags,
                                    const double *values, int n, slim_error *err)
{
    if (!e)
        return SLIM_OK;
    if (e->fd < 0) {
        slim_status st = events_start(e, err);
        if (st)
            return st;
    }
    enum { MAX = 32 };
    if (n > MAX)
        n = MAX;
    Slimtb__SummaryValue vals[MAX], *pv[MAX];
    for (int i = 0; i < n; i++) {
        slimtb__summary_value__init(&vals[i]);
        vals[i].tag = (char *)tags[i];
        vals[i].has_simple_value = true;
        vals[i].simple_value = (float)values[i];
        pv[i] = &vals[i];
    }
    Slimtb__Summary sum = SLIMTB__SUMMARY__INIT;
    sum.n_value = (size_t)n;
    sum.value = pv;
    Slimtb__Event ev = SLIMTB__EVENT__INIT;
    ev.has_wall_time = true;
    ev.wall_time = wall_time();
    ev.has_step = true;
    ev.step = step;
    ev.summary = &sum;
    return write_event(e, &ev, err);
}

void slim__rt_events_close(slim__rt_events *e)
{
    if (!e)
        return;
    if (e->fd >= 0) {
        fsync(e->fd);
        close(e->fd);
    }
    free(e);
}

const char *slim__rt_events_path(const slim__rt_events *e)
{
    return e ? e->path : "";
}

/* ---- JSON lines ------------------------------------------------------------------- */

struct slim__rt_jsonl {
    int fd;
    char path[];
};

slim__rt_jsonl *slim__rt_jsonl_open(const char *path, slim_error *err)
{
    slim__rt_jsonl *j = malloc(sizeof *j + strlen(path) + 1);
    if (!j) {
        slim__error(err, SLIM_ENOMEM, "out of memory");
        return NULL;
    }
    strcpy(j->path, path);
    j->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (j->fd < 0) {
        slim__error(err, SLIM_EIO, "cannot open %s: %s", path, strerror(errno));
        free(j);
        return NULL;
    }
    return j;
}

void slim__rt_jsonl_close(slim__rt_jsonl *j)
{
    if (!j)
        return;
    fsync(j->fd);
    close(j->fd);
    free(j);
}

/* The step of a JSON line ({"step": N, ...}); false without one. */
static bool line_step(const char *line, int64_t *step)
{
    const char *p = strstr(line, "\"step\": ");
    if (!p)
        return false;
    char *end;
    long long v = strtoll(p + 8, &end, 10);
    if (end == p + 8)
        return false;
    *step = v;
    return true;
}

/* Temporary files of an earlier trim that was killed: PATH.tmp-PID. */
static void remove_stale_temps(const char *path)
{
    char dir[1200];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : path;
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s.tmp-", base);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (!strncmp(e->d_name, prefix, strlen(prefix))) {
            char p[1600];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
}

slim_status slim__rt_jsonl_trim(const char *path, int64_t max_step, int *dropped, slim_error *err)
{
    *dropped = 0;
    remove_stale_temps(path);
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT
                   ? SLIM_OK
                   : slim__error(err, SLIM_EIO, "cannot read %s: %s", path, strerror(errno));
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    char *line = NULL;
    size_t cap = 0;
    ssize_t k;
    while (m && (k = getline(&line, &cap, f)) > 0) {
        int64_t step;
        /* kept: whole lines up to max_step (a cut last line, or rows of
         * steps the resumed run will do again, are dropped) */
        if (line[k - 1] == '\n' && (!line_step(line, &step) || step <= max_step))
            fwrite(line, 1, (size_t)k, m);
        else
            (*dropped)++;
    }
    free(line);
    fclose(f);
    if (!m || fclose(m) != 0) {
        free(text);
        return slim__error(err, SLIM_ENOMEM, "out of memory reading %s", path);
    }
    slim_status st = SLIM_OK;
    if (*dropped) {
        char tmp[1300];
        snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
            st = slim__error(err, SLIM_EIO, "%s: cannot create: %s", tmp, strerror(errno));
        else {
            st = append_whole(fd, tmp, text, len, err);
            if (!st && fsync(fd) != 0)
                st = slim__error(err, SLIM_EIO, "%s: fsync failed: %s", tmp, strerror(errno));
            close(fd);
            if (!st && rename(tmp, path) != 0)
                st = slim__error(err, SLIM_EIO, "cannot rename %s to %s: %s", tmp, path,
                                 strerror(errno));
            if (st)
                unlink(tmp);
        }
    }
    free(text);
    return st;
}

const char *slim__rt_json_str(const char *s, char *buf, size_t n)
{
    size_t o = 0;
    if (n < 3)
        return "\"\"";
    buf[o++] = '"';
    for (; s && *s && o + 8 < n; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(buf + o, n - o, "\\u%04x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    buf[o++] = '"';
    buf[o] = 0;
    return buf;
}

static void json_num(FILE *f, double v)
{
    if (!isfinite(v))
        fputs("null", f);
    else if (v == floor(v) && fabs(v) < 1e15)
        fprintf(f, "%.0f", v);
    else
        fprintf(f, "%.6g", v);
}

slim_status slim__rt_jsonl_write(slim__rt_jsonl *j, const char *const *keys, const double *values,
                                 int n, const char *skey, const char *sval, slim_error *err)
{
    if (!j)
        return SLIM_OK;
    /* The line is made in memory and written with one append: whole or not at all. */
    char b[1200], *line = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&line, &len);
    if (!m)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    fputc('{', m);
    for (int i = 0; i < n; i++) {
        fprintf(m, "%s%s: ", i ? ", " : "", slim__rt_json_str(keys[i], b, sizeof b));
        json_num(m, values[i]);
    }
    if (skey) {
        fprintf(m, "%s%s: ", n ? ", " : "", slim__rt_json_str(skey, b, sizeof b));
        fputs(slim__rt_json_str(sval, b, sizeof b), m);
    }
    fputs("}\n", m);
    if (fclose(m) != 0) {
        free(line);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    slim_status st = append_whole(j->fd, j->path, line, len, err);
    free(line);
    return st;
}

/* ---- Chrome trace --------------------------------------------------------------- */

typedef struct trace_ev {
    char ph; /* 'X', 'C' */
    int tid;
    double ts, dur, value;
    char *name;
    const char *cat;
    char *args;
} trace_ev;

typedef struct trace_thread {
    int tid, sort;
    char *name;
} trace_thread;

struct slim__rt_trace {
    pthread_mutex_t mu;
    double t0;
    size_t n, cap, max, dropped;
    trace_ev *ev;
    int n_threads;
    trace_thread threads[256];
};

slim__rt_trace *slim__rt_trace_new(size_t max_events)
{
    slim__rt_trace *t = calloc(1, sizeof *t);
    if (!t)
        return NULL;
    pthread_mutex_init(&t->mu, NULL);
    t->t0 = slim__rt_now();
    t->max = max_events ? max_events : 1000000;
    return t;
}

void slim__rt_trace_free(slim__rt_trace *t)
{
    if (!t)
        return;
    for (size_t i = 0; i < t->n; i++) {
        free(t->ev[i].name);
        free(t->ev[i].args);
    }
    for (int i = 0; i < t->n_threads; i++)
        free(t->threads[i].name);
    free(t->ev);
    pthread_mutex_destroy(&t->mu);
    free(t);
}

void slim__rt_trace_thread(slim__rt_trace *t, int tid, const char *name, int sort_index)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    int i = 0;
    while (i < t->n_threads && t->threads[i].tid != tid)
        i++;
    if (i < (int)(sizeof t->threads / sizeof t->threads[0])) {
        if (i == t->n_threads)
            t->n_threads++;
        else
            free(t->threads[i].name);
        t->threads[i].tid = tid;
        t->threads[i].sort = sort_index;
        t->threads[i].name = strdup(name);
    }
    pthread_mutex_unlock(&t->mu);
}

static trace_ev *push(slim__rt_trace *t)
{
    if (t->n >= t->max) {
        t->dropped++;
        return NULL;
    }
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 4096;
        trace_ev *e = realloc(t->ev, cap * sizeof *e);
        if (!e) {
            t->dropped++;
            return NULL;
        }
        t->ev = e;
        t->cap = cap;
    }
    trace_ev *e = &t->ev[t->n++];
    memset(e, 0, sizeof *e);
    return e;
}

void slim__rt_trace_span(slim__rt_trace *t, int tid, const char *name, const char *cat,
                         double begin, double end, const char *args_json)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    trace_ev *e = push(t);
    if (e) {
        e->ph = 'X';
        e->tid = tid;
        e->ts = begin - t->t0;
        e->dur = end - begin;
        e->name = strdup(name);
        e->cat = cat;
        e->args = args_json ? strdup(args_json) : NULL;
    }
    pthread_mutex_unlock(&t->mu);
}

void slim__rt_trace_counter(slim__rt_trace *t, const char *name, double when, double value)
{
    if (!t)
        return;
    pthread_mutex_lock(&t->mu);
    trace_ev *e = push(t);
    if (e) {
        e->ph = 'C';
        e->ts = when - t->t0;
        e->name = strdup(name);
        e->value = value;
    }
    pthread_mutex_unlock(&t->mu);
}

size_t slim__rt_trace_dropped(const slim__rt_trace *t)
{
    return t ? t->dropped : 0;
}

slim_status slim__rt_trace_write(slim__rt_trace *t, const char *path, slim_error *err)
{
    if (!t)
        return SLIM_OK;
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f)
        return slim__error(err, SLIM_EIO, "cannot create %s: %s", tmp, strerror(errno));
    char b[1200];
    pthread_mutex_lock(&t->mu);
    fprintf(f, "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n");
    fprintf(f, "{\"ph\": \"M\", \"pid\": 1, \"name\": \"process_name\", \"args\": {\"name\": "
               "\"slimrun\"}}");
    for (int i = 0; i < t->n_threads; i++) {
        fprintf(f,
                ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_name\", "
                "\"args\": {\"name\": %s}}",
                t->threads[i].tid, slim__rt_json_str(t->threads[i].name, b, sizeof b));
        fprintf(f,
                ",\n{\"ph\": \"M\", \"pid\": 1, \"tid\": %d, \"name\": \"thread_sort_index\", "
                "\"args\": {\"sort_index\": %d}}",
                t->threads[i].tid, t->threads[i].sort);
    }
    for (size_t i = 0; i < t->n; i++) {
        const trace_ev *e = &t->ev[i];
        if (e->ph == 'X')
            fprintf(f,
                    ",\n{\"ph\": \"X\", \"pid\": 1, \"tid\": %d, \"ts\": %.3f, \"dur\": %.3f, "
                    "\"name\": %s, \"cat\": \"%s\"%s%s}",
                    e->tid, e->ts * 1e6, e->dur * 1e6, slim__rt_json_str(e->name, b, sizeof b),
                    e->cat ? e->cat : "run", e->args ? ", \"args\": " : "", e->args ? e->args : "");
        else
            fprintf(f,
                    ",\n{\"ph\": \"C\", \"pid\": 1, \"ts\": %.3f, \"name\": %s, \"args\": "
                    "{\"value\": %g}}",
                    e->ts * 1e6, slim__rt_json_str(e->name, b, sizeof b), e->value);
    }
    fprintf(f, "\n]}\n");
    pthread_mutex_unlock(&t->mu);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad) {
        unlink(tmp);
        return slim__error(err, SLIM_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        unlink(tmp);
        return slim__error(err, SLIM_EIO, "cannot rename %s: %s", path, strerror(errno));
    }
    return SLIM_OK;
}
