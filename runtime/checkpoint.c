/* runtime/checkpoint.c - saving and restoring checkpoints (see checkpoint.h
 * and checkpoint.proto for the format). */
#include "runtime/checkpoint.h"

#include "engine/error.h"
#include "runtime/checkpoint.pb-c.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint tensors are stored as little-endian f32: add byte swapping for this target"
#endif

#define FORMAT "slim-checkpoint"
#define SUFFIX ".slimckpt"
#define PREFIX "model.ckpt-"

void slim__rt_ckpt_path(const char *dir, int64_t step, char *path, size_t n)
{
    snprintf(path, n, "%s/" PREFIX "%lld" SUFFIX, dir, (long long)step);
}

bool slim__rt_in_scopes(const char *name, const char *scopes)
{
    if (!scopes || !scopes[0])
        return false;
    const char *s = scopes;
    while (*s) {
        while (*s == ',' || *s == ' ')
            s++;
        size_t len = strcspn(s, ",");
        while (len && s[len - 1] == ' ')
            len--;
        if (len && strncmp(name, s, len) == 0)
            return true;
        s += strcspn(s, ",");
    }
    return false;
}

/* ---- saving ------------------------------------------------------------------- */

static slim_status write_msg(slim_tfrecord_writer *w, const ProtobufCMessage *m, uint8_t **buf,
                             size_t *cap, slim_error *err)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n > *cap) {
        uint8_t *b = realloc(*buf, n);
        if (!b)
            return slim__error(err, SLIM_ENOMEM, "out of memory packing a checkpoint record");
        *buf = b;
        *cap = n;
    }
    protobuf_c_message_pack(m, *buf);
    return slim_tfrecord_write(w, *buf, n, err);
}

static slim_status write_tensor(slim_tfrecord_writer *w, const char *name,
                                Slimckpt__TensorKind kind, const char *slot, int slot_index,
                                const slim_shape *shape, const float *data, bool trainable,
                                uint32_t *crc, uint8_t **buf, size_t *cap, slim_error *err)
{
    Slimckpt__CheckpointTensor t = SLIMCKPT__CHECKPOINT_TENSOR__INIT;
    int64_t dims[SLIM_MAX_DIMS];
    for (int i = 0; i < shape->rank; i++)
        dims[i] = shape->dim[i];
    t.name = (char *)name;
    t.has_kind = true;
    t.kind = kind;
    if (slot) {
        t.slot = (char *)slot;
        t.has_slot_index = true;
        t.slot_index = slot_index;
    }
    t.n_shape = (size_t)shape->rank;
    t.shape = dims;
    t.has_data = true;
    t.data.len = (size_t)slim_shape_numel(shape) * sizeof(float);
    t.data.data = (uint8_t *)data;
    t.has_trainable = true;
    t.trainable = trainable;
    *crc = slim_crc32c(*crc, data, t.data.len);
    return write_msg(w, &t.base, buf, cap, err);
}

slim_status slim__rt_ckpt_save(const char *path, const slim__rt_ckpt_state *s, slim_error *err)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    slim_tfrecord_writer *w = NULL;
    slim_status st = slim_tfrecord_writer_new(tmp, SLIM_COMPRESSION_NONE, &w, err);
    if (st)
        return st;
    int np = slim_graph_param_count(s->g);
    int n_tensors = 0;
    for (int i = 0; i < np; i++) {
        const char *name;
        slim_tensor v;
        unsigned flags;
        slim_graph_param_at(s->g, i, &name, &v, &flags);
        n_tensors++;
        for (int k = 0; s->p && k < s->n_slots; k++) {
            slim_tensor sv;
            if (slim_program_slot(s->p, name, k, &sv, NULL) == SLIM_OK)
                n_tensors++;
        }
        if (s->ema && s->ema[i])
            n_tensors++;
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    Slimckpt__CheckpointHeader h = SLIMCKPT__CHECKPOINT_HEADER__INIT;
    h.version = 1;
    h.format = FORMAT;
    h.global_step = s->global_step;
    h.has_seed = true;
    h.seed = s->seed;
    h.model_name = (char *)s->model_name;
    h.optimizer = (char *)s->optimizer;
    h.has_num_classes = true;
    h.num_classes = s->num_classes;
    h.has_wall_time = true;
    h.wall_time = (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
    h.has_num_threads = true;
    h.num_threads = s->num_threads;
    h.has_batch_size = true;
    h.batch_size = s->batch_size;
    h.has_replicas = true;
    h.replicas = s->replicas > 1 ? s->replicas : 1;
    if (s->by_file) {
        h.has_input_by_file = true;
        h.input_by_file = true;
        h.n_replica_positions = (size_t)s->n_rpos;
        h.replica_positions = s->rpos;
    }
    h.run_config = (char *)s->run_config;
    h.has_n_tensors = true;
    h.n_tensors = n_tensors;
    h.has_has_ema = true;
    h.has_ema = s->ema != NULL;
    if (s->has_pos) {
        h.has_pipeline_epoch = h.has_pipeline_index = h.has_pipeline_consumed = true;
        h.pipeline_epoch = s->pos.epoch;
        h.pipeline_index = s->pos.index;
        h.pipeline_consumed = s->pos.consumed;
        h.has_examples_seen = true;
        h.examples_seen = s->pos.consumed;
    }
    uint8_t *buf = NULL;
    size_t cap = 0;
    uint32_t crc = 0;
    st = write_msg(w, &h.base, &buf, &cap, err);
    for (int i = 0; i < np && !st; i++) {
        const char *name;
        slim_tensor v;
        unsigned flags;
        slim_graph_param_at(s->g, i, &name, &v, &flags);
        st = write_tensor(w, name, SLIMCKPT__TENSOR_KIND__PARAM, NULL, 0, &v.shape, v.data,
                          flags & SLIM_PARAM_TRAINABLE, &crc, &buf, &cap, err);
        for (int k = 0; s->p && k < s->n_slots && !st; k++) {
            slim_tensor sv;
            if (slim_program_slot(s->p, name, k, &sv, NULL) == SLIM_OK)
                st = write_tensor(w, name, SLIMCKPT__TENSOR_KIND__SLOT, s->slot_names[k], k,
                                  &sv.shape, sv.data, false, &crc, &buf, &cap, err);
        }
        if (!st && s->ema && s->ema[i])
            st = write_tensor(w, name, SLIMCKPT__TENSOR_KIND__EMA, NULL, 0, &v.shape, s->ema[i],
                              false, &crc, &buf, &cap, err);
    }
    if (!st) {
        Slimckpt__CheckpointFooter f = SLIMCKPT__CHECKPOINT_FOOTER__INIT;
        f.n_tensors = n_tensors;
        f.data_crc32c = crc;
        st = write_msg(w, &f.base, &buf, &cap, err);
    }
    free(buf);
    if (!st)
        st = slim_tfrecord_writer_close(w, err); /* flushes and fsyncs */
    else
        slim_tfrecord_writer_free(w);
    w = NULL;
    if (!st && rename(tmp, path) != 0)
        st = slim__error(err, SLIM_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
    if (st) {
        unlink(tmp);
        slim__error_prefix(err,
                           "checkpoint %s not written (earlier checkpoints are intact): ", path);
        return st;
    }
    /* make the rename durable */
    char dir[1024];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *slash = 0;
    else
        snprintf(dir, sizeof dir, ".");
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
    return SLIM_OK;
}

/* ---- reading ---------------------------------------------------------------------- */

typedef struct reader {
    slim_tfrecord_reader *r;
    const char *path;
    Slimckpt__CheckpointHeader *h;
} reader;

static slim_status open_reader(const char *path, reader *rd, slim_error *err)
{
    memset(rd, 0, sizeof *rd);
    rd->path = path;
    slim_status st = slim_tfrecord_open(path, SLIM_COMPRESSION_NONE, true, &rd->r, err);
    if (st)
        return st;
    const uint8_t *data;
    size_t len;
    int64_t off;
    st = slim_tfrecord_next(rd->r, &data, &len, &off, err);
    if (st)
        return st;
    if (!data)
        return slim__error(err, SLIM_ECORRUPT, "%s: empty file, not a checkpoint", path);
    rd->h = slimckpt__checkpoint_header__unpack(NULL, len, data);
    if (!rd->h || !rd->h->format || strcmp(rd->h->format, FORMAT) != 0)
        return slim__error(err, SLIM_ECORRUPT, "%s: not a slim checkpoint (bad header record)",
                           path);
    if (rd->h->version != 1)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s: checkpoint format version %u (this slim reads version 1)", path,
                           rd->h->version);
    return SLIM_OK;
}

static void close_reader(reader *rd)
{
    if (rd->h)
        slimckpt__checkpoint_header__free_unpacked(rd->h, NULL);
    slim_tfrecord_close(rd->r);
    memset(rd, 0, sizeof *rd);
}

/* The next tensor (caller frees), or NULL with *footer set at the footer. */
static slim_status next_tensor(reader *rd, int index, Slimckpt__CheckpointTensor **t,
                               Slimckpt__CheckpointFooter **footer, slim_error *err)
{
    *t = NULL;
    *footer = NULL;
    const uint8_t *data;
    size_t len;
    int64_t off;
    slim_status st = slim_tfrecord_next(rd->r, &data, &len, &off, err);
    if (st)
        return st;
    if (!data)
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: truncated checkpoint: it ends after %d of %d tensors, without "
                           "its footer",
                           rd->path, index, rd->h->has_n_tensors ? rd->h->n_tensors : -1);
    if (index == rd->h->n_tensors) {
        *footer = slimckpt__checkpoint_footer__unpack(NULL, len, data);
        if (!*footer)
            return slim__error(err, SLIM_ECORRUPT, "%s: bad footer record at byte %lld", rd->path,
                               (long long)off);
        return SLIM_OK;
    }
    Slimckpt__CheckpointTensor *u = slimckpt__checkpoint_tensor__unpack(NULL, len, data);
    if (!u)
        return slim__error(err, SLIM_ECORRUPT, "%s: bad tensor record %d at byte %lld", rd->path,
                           index, (long long)off);
    /* The element count, checked before it can overflow. */
    const char *why = u->n_shape > SLIM_MAX_DIMS ? " (too many dimensions)" : "";
    uint64_t numel = 1;
    for (size_t i = 0; i < u->n_shape && !*why; i++) {
        if (u->shape[i] < 0)
            why = " (a negative dimension)";
        else if (u->shape[i] > 0 && numel > (uint64_t)INT64_MAX / (uint64_t)u->shape[i])
            why = " (its element count overflows)";
        else
            numel *= (uint64_t)u->shape[i];
    }
    if (*why || !u->has_data || u->data.len % sizeof(float) ||
        u->data.len / sizeof(float) != numel) {
        char nm[256];
        char shp[160] = "";
        for (size_t i = 0, o = 0; i < u->n_shape; i++) {
            if (o > sizeof shp - 26) {
                snprintf(shp + o, sizeof shp - o, ",...");
                break;
            }
            o += (size_t)snprintf(shp + o, sizeof shp - o, "%s%lld", i ? "," : "",
                                  (long long)u->shape[i]);
        }
        st = slim__error(err, SLIM_ECORRUPT,
                         "%s: tensor '%s' at byte %lld: %zu data bytes do not match its shape "
                         "[%s]%s",
                         rd->path, slim__printable(u->name, nm, sizeof nm), (long long)off,
                         u->data.len, shp, why);
        slimckpt__checkpoint_tensor__free_unpacked(u, NULL);
        return st;
    }
    *t = u;
    return SLIM_OK;
}

/* From the run's flags ("flag=value" lines): the last train_image_size= and
 * every set=NAME=VALUE as "NAME=VALUE" lines (those that fit). */
static void run_config_model(const char *rc, int *image_size, char *defines, size_t n)
{
    *image_size = 0;
    defines[0] = 0;
    size_t used = 0;
    for (const char *l = rc; l && *l;) {
        const char *end = strchr(l, '\n');
        size_t len = end ? (size_t)(end - l) : strlen(l);
        if (len > 17 && !strncmp(l, "train_image_size=", 17))
            *image_size = atoi(l + 17);
        else if (len > 4 && !strncmp(l, "set=", 4) && used + len - 4 + 2 <= n) {
            char line[512];
            snprintf(line, sizeof line, "%.*s", (int)(len - 4), l + 4);
            slim__printable(line, defines + used, n - used);
            used = strlen(defines);
            if (used + 1 < n) {
                defines[used++] = '\n';
                defines[used] = 0;
            }
        }
        l = end ? end + 1 : NULL;
    }
    if (*image_size < 0)
        *image_size = 0;
}

static void fill_info(const Slimckpt__CheckpointHeader *h, slim_checkpoint_info *info)
{
    if (!info)
        return;
    memset(info, 0, sizeof *info);
    info->global_step = h->global_step;
    info->seed = h->seed;
    info->n_tensors = h->n_tensors;
    info->has_ema = h->has_ema;
    info->num_classes = h->num_classes;
    /* Names as text safe to print (the same for any UTF-8 name without control characters). */
    slim__printable(h->model_name, info->model_name, sizeof info->model_name);
    slim__printable(h->optimizer, info->optimizer, sizeof info->optimizer);
    run_config_model(h->run_config, &info->image_size, info->defines, sizeof info->defines);
}

slim_status slim_checkpoint_verify(const char *path, slim_checkpoint_info *info, slim_error *err)
{
    reader rd;
    slim_status st = open_reader(path, &rd, err);
    uint32_t crc = 0;
    for (int i = 0; !st; i++) {
        Slimckpt__CheckpointTensor *t;
        Slimckpt__CheckpointFooter *f;
        st = next_tensor(&rd, i, &t, &f, err);
        if (st)
            break;
        if (f) {
            if (f->n_tensors != rd.h->n_tensors || f->data_crc32c != crc)
                st = slim__error(err, SLIM_ECORRUPT,
                                 "%s: the footer does not match the tensors (corrupt checkpoint)",
                                 path);
            slimckpt__checkpoint_footer__free_unpacked(f, NULL);
            break;
        }
        crc = slim_crc32c(crc, t->data.data, t->data.len);
        slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
    }
    if (!st)
        fill_info(rd.h, info);
    close_reader(&rd);
    return st;
}

/* ---- listing ---------------------------------------------------------------------- */

static int by_step_desc(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return *x < *y ? 1 : *x > *y ? -1 : 0;
}

int slim__rt_ckpt_list(const char *dir, int64_t *steps, char (*paths)[1024], int max)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int64_t *all = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name;
        size_t l = strlen(nm), lp = strlen(PREFIX), ls = strlen(SUFFIX);
        if (l <= lp + ls || strncmp(nm, PREFIX, lp) != 0 || strcmp(nm + l - ls, SUFFIX) != 0)
            continue;
        char *end;
        long long step = strtoll(nm + lp, &end, 10);
        if (end != nm + l - ls || step < 0)
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            int64_t *a = realloc(all, (size_t)cap * sizeof *a);
            if (!a)
                break;
            all = a;
        }
        all[n++] = step;
    }
    closedir(d);
    if (n)
        qsort(all, (size_t)n, sizeof *all, by_step_desc);
    int k = n < max ? n : max;
    for (int i = 0; i < k; i++) {
        steps[i] = all[i];
        if (paths)
            slim__rt_ckpt_path(dir, all[i], paths[i], sizeof paths[i]);
    }
    free(all);
    return k;
}

void slim__rt_ckpt_prune(const char *dir, int keep)
{
    enum { MAX = 4096 };
    int64_t *steps = malloc(MAX * sizeof *steps);
    char(*paths)[1024] = malloc(MAX * sizeof *paths);
    if (steps && paths) {
        int n = slim__rt_ckpt_list(dir, steps, paths, MAX);
        for (int i = keep > 0 ? keep : 1; i < n; i++)
            unlink(paths[i]);
    }
    free(steps);
    free(paths);
    /* temporary files a crash left behind (not our own: we save synchronously) */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) == 0 && strstr(e->d_name, SUFFIX ".tmp-")) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    if (d)
        closedir(d);
}

slim_status slim_checkpoint_latest(const char *dir, char *path, size_t n, char *skipped,
                                   size_t n_skipped, slim_error *err)
{
    enum { MAX = 64 };
    int64_t steps[MAX];
    char(*paths)[1024] = malloc(MAX * sizeof *paths);
    if (!paths)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    if (skipped && n_skipped)
        skipped[0] = 0;
    int k = slim__rt_ckpt_list(dir, steps, paths, MAX);
    if (k < 0) {
        int e = errno;
        free(paths);
        return slim__error(err, e == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO, "cannot read %s: %s", dir,
                           strerror(e));
    }
    for (int i = 0; i < k; i++) {
        slim_error e = {0};
        if (slim_checkpoint_verify(paths[i], NULL, &e) == SLIM_OK) {
            snprintf(path, n, "%s", paths[i]);
            free(paths);
            return SLIM_OK;
        }
        if (skipped && n_skipped) {
            size_t l = strlen(skipped);
            snprintf(skipped + l, n_skipped - l, "%s%s", l ? "\n" : "", e.msg);
        }
    }
    free(paths);
    return slim__error(err, SLIM_ENOTFOUND, "no %scheckpoint (%s*%s) in %s", k ? "valid " : "",
                       PREFIX, SUFFIX, dir);
}

/* ---- restoring -------------------------------------------------------------------- */

static void shape_of(const Slimckpt__CheckpointTensor *t, slim_shape *s)
{
    memset(s, 0, sizeof *s);
    s->rank = (int)t->n_shape;
    for (size_t i = 0; i < t->n_shape && i < SLIM_MAX_DIMS; i++)
        s->dim[i] = t->shape[i];
}

static bool same_shape(const slim_shape *a, const slim_shape *b)
{
    if (a->rank != b->rank)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (a->dim[i] != b->dim[i])
            return false;
    return true;
}

static void report(const slim_restore_opts *o, const char *fmt, const char *a, const char *b)
{
    if (!o || !o->report || !o->report_size)
        return;
    size_t l = strlen(o->report);
    if (l + 1 >= o->report_size)
        return;
    snprintf(o->report + l, o->report_size - l, fmt, a, b);
}

static int param_index(slim_graph *g, const char *name)
{
    int np = slim_graph_param_count(g);
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        if (strcmp(nm, name) == 0)
            return i;
    }
    return -1;
}

slim_status slim__rt_ckpt_restore(const char *path, slim__rt_ckpt_state *s, bool resume,
                                  const slim_restore_opts *o, slim_error *err)
{
    char file[1024];
    slim_status st;
    /* a directory means its newest valid checkpoint */
    DIR *d = opendir(path);
    if (d) {
        closedir(d);
        st = slim_checkpoint_latest(path, file, sizeof file, NULL, 0, err);
        if (st)
            return st;
    } else {
        snprintf(file, sizeof file, "%s", path);
        st = slim_checkpoint_verify(file, NULL, err);
        if (st)
            return st;
    }
    reader rd;
    st = open_reader(file, &rd, err);
    if (st) {
        close_reader(&rd);
        return st;
    }
    slim_graph *g = s->g;
    int np = slim_graph_param_count(g);
    /* 1: restored from its value, 2: from its moving average */
    uint8_t *done = calloc((size_t)np + 1, sizeof *done);
    if (!done) {
        close_reader(&rd);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    int use_ema = resume ? 0 : o ? o->use_ema : -1;
    bool file_ema = rd.h->has_ema;
    if (use_ema == 1 && !file_ema) {
        close_reader(&rd);
        free(done);
        return slim__error(err, SLIM_ENOTFOUND,
                           "%s has no moving averages (train with --moving_average_decay)", file);
    }
    bool take_ema = use_ema != 0 && file_ema;
    const char *excl = o ? o->exclude_scopes : NULL;
    for (int i = 0; !st; i++) {
        Slimckpt__CheckpointTensor *t;
        Slimckpt__CheckpointFooter *f;
        st = next_tensor(&rd, i, &t, &f, err);
        if (st || f) {
            if (f)
                slimckpt__checkpoint_footer__free_unpacked(f, NULL);
            break;
        }
        slim_shape ts;
        shape_of(t, &ts);
        int pi = param_index(g, t->name);
        bool excluded = slim__rt_in_scopes(t->name, excl);
        const char *nm;
        slim_tensor v = {0};
        unsigned fl;
        if (pi >= 0)
            slim_graph_param_at(g, pi, &nm, &v, &fl);
        char b1[96], b2[96], tn[256];
        slim__printable(t->name, tn, sizeof tn); /* for messages */
        if (t->kind == SLIMCKPT__TENSOR_KIND__PARAM || t->kind == SLIMCKPT__TENSOR_KIND__EMA) {
            bool is_ema = t->kind == SLIMCKPT__TENSOR_KIND__EMA;
            if (excluded) {
                if (!is_ema)
                    report(o, "excluded %s %s\n", tn, slim__shape_str(&ts, b1, sizeof b1));
            } else if (pi < 0) {
                if (!is_ema)
                    report(o, "unused %s%s (not in the model)\n", tn, "");
            } else if (!same_shape(&ts, &v.shape)) {
                if (!is_ema) {
                    /* t->name is the model's here (param_index found it): printable */
                    const char *slash = strrchr(t->name, '/');
                    int scope_len = slash ? (int)(slash - t->name) : (int)strlen(t->name);
                    st = slim__error(
                        err, SLIM_ESHAPE,
                        "%s: '%s' is %s in the checkpoint but %s in the model; to fine-tune "
                        "with a new head (another class count), exclude its scope, e.g. "
                        "--checkpoint_exclude_scopes=%.*s",
                        file, t->name, slim__shape_str(&ts, b1, sizeof b1),
                        slim__shape_str(&v.shape, b2, sizeof b2), scope_len, t->name);
                }
            } else if (is_ema && resume) {
                if (s->ema && s->ema[pi])
                    memcpy(s->ema[pi], t->data.data, t->data.len);
            } else if (is_ema) {
                if (take_ema) { /* the average replaces the value, whichever came first */
                    memcpy(v.data, t->data.data, t->data.len);
                    done[pi] = 2;
                }
            } else {
                if (done[pi] != 2)
                    memcpy(v.data, t->data.data, t->data.len);
                if (!done[pi])
                    done[pi] = 1;
            }
        } else if (t->kind == SLIMCKPT__TENSOR_KIND__SLOT && resume && s->p && pi >= 0) {
            int k = t->has_slot_index ? t->slot_index : -1;
            slim_tensor sv;
            if (k >= 0 && k < s->n_slots && t->slot && strcmp(t->slot, s->slot_names[k]) == 0 &&
                slim_program_slot(s->p, t->name, k, &sv, NULL) == SLIM_OK &&
                same_shape(&sv.shape, &ts))
                memcpy(sv.data, t->data.data, t->data.len);
        }
        slimckpt__checkpoint_tensor__free_unpacked(t, NULL);
    }
    if (!st) {
        /* every parameter of the model must have come from the file */
        for (int i = 0; i < np && !st; i++) {
            const char *nm;
            slim_tensor v;
            unsigned fl;
            slim_graph_param_at(g, i, &nm, &v, &fl);
            if (done[i] || slim__rt_in_scopes(nm, excl))
                continue;
            if (o && o->ignore_missing_vars && !resume) {
                report(o, "missing %s%s (kept its initial value)\n", nm, "");
                continue;
            }
            /* (train's fine-tuning adds its --ignore_missing_vars; eval has none) */
            st = slim__error(err, SLIM_ENOTFOUND, "%s has no '%s'%s", file, nm,
                             resume ? ""
                                    : " (a parameter of the model the checkpoint lacks: is it a "
                                      "checkpoint of another model, or of another version?)");
        }
    }
    if (!st) {
        const Slimckpt__CheckpointHeader *h = rd.h;
        s->global_step = h->global_step;
        s->seed = h->seed;
        s->has_ema = h->has_ema;
        s->has_pos = h->has_pipeline_epoch;
        s->pos.epoch = h->pipeline_epoch;
        s->pos.index = h->pipeline_index;
        s->pos.consumed = h->pipeline_consumed;
        s->num_classes = h->num_classes;
        s->num_threads = h->num_threads;
        s->batch_size = h->batch_size;
        s->replicas = h->has_replicas && h->replicas > 1 ? h->replicas : 1;
        s->by_file = h->has_input_by_file && h->input_by_file;
        s->n_rpos = 0;
        s->rpos = NULL;
        if (resume && s->by_file && h->n_replica_positions % 3 == 0 && h->n_replica_positions < 3u << 20 &&
            (s->rpos = malloc((h->n_replica_positions + 1) * sizeof *s->rpos))) {
            memcpy(s->rpos, h->replica_positions, h->n_replica_positions * sizeof *s->rpos);
            s->n_rpos = (int)h->n_replica_positions;
        }
    }
    free(done);
    close_reader(&rd);
    return st;
}

slim_status slim_checkpoint_restore(const char *path, slim_graph *g, const slim_restore_opts *o,
                                    slim_checkpoint_info *info, slim_error *err)
{
    slim__rt_ckpt_state s = {.g = g};
    slim_status st = slim__rt_ckpt_restore(path, &s, false, o, err);
    if (st == SLIM_OK && info) {
        memset(info, 0, sizeof *info);
        info->global_step = s.global_step;
        info->seed = s.seed;
        info->has_ema = s.has_ema;
        info->num_classes = s.num_classes;
    }
    return st;
}
