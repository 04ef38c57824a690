/* runtime/checkpoint.c - saving and restoring checkpoints (see checkpoint.h
 * and checkpoint.proto for the format). */
#include "runtime/checkpoint.h"

#include "core/error.h"
#include "runtime/checkpoint.pb-c.h"
#include "runtime/ckpt_reader.h"

#include <ctype.h>
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

void slim__rt_ckpt_path(const char *dir, int64_t step, char *path, size_t n)
{
    snprintf(path, n, "%s/" SLIM__CKPT_PREFIX "%lld" SLIM__CKPT_SUFFIX, dir, (long long)step);
}

void slim__rt_ckpt_tf_prefix(const char *dir, int64_t step, char *path, size_t n)
{
    snprintf(path, n, "%s/" SLIM__CKPT_PREFIX "%lld", dir, (long long)step);
}

/* ---- saving ------------------------------------------------------------------- */

struct slim__rt_ckpt_writer {
    slim_tfrecord_writer *w;
    char path[1024], tmp[1100];
    uint8_t *buf;
    size_t cap;
    uint32_t crc;
    int n, expected;
};

static slim_status write_msg(slim__rt_ckpt_writer *w, const ProtobufCMessage *m, slim_error *err)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n > w->cap) {
        uint8_t *b = realloc(w->buf, n);
        if (!b)
            return slim__error(err, SLIM_ENOMEM, "out of memory packing a checkpoint record");
        w->buf = b;
        w->cap = n;
    }
    protobuf_c_message_pack(m, w->buf);
    return slim_tfrecord_write(w->w, w->buf, n, err);
}

void slim__rt_ckpt_writer_abort(slim__rt_ckpt_writer *w)
{
    if (!w)
        return;
    slim_tfrecord_writer_free(w->w);
    unlink(w->tmp);
    free(w->buf);
    free(w);
}

slim_status slim__rt_ckpt_writer_open(const char *path, const Slimckpt__CheckpointHeader *h,
                                      slim__rt_ckpt_writer **out, slim_error *err)
{
    *out = NULL;
    slim__rt_ckpt_writer *w = calloc(1, sizeof *w);
    if (!w)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp-%ld", path, (long)getpid());
    w->expected = h->n_tensors;
    slim_status st = slim_tfrecord_writer_new(w->tmp, SLIM_COMPRESSION_NONE, &w->w, err);
    if (!st)
        st = write_msg(w, &h->base, err);
    if (st) {
        slim__rt_ckpt_writer_abort(w);
        slim__error_prefix(err,
                           "checkpoint %s not written (earlier checkpoints are intact): ", path);
        return st;
    }
    *out = w;
    return SLIM_OK;
}

slim_status slim__rt_ckpt_writer_add(slim__rt_ckpt_writer *w, const char *name, int kind,
                                     const char *slot, int slot_index, int rank, const int64_t *dim,
                                     const float *data, bool trainable, slim_error *err)
{
    Slimckpt__CheckpointTensor t = SLIMCKPT__CHECKPOINT_TENSOR__INIT;
    t.name = (char *)name;
    t.has_kind = true;
    t.kind = (Slimckpt__TensorKind)kind;
    if (slot) {
        t.slot = (char *)slot;
        t.has_slot_index = true;
        t.slot_index = slot_index;
    }
    t.n_shape = (size_t)rank;
    t.shape = (int64_t *)dim;
    int64_t numel = 1;
    for (int i = 0; i < rank; i++)
        numel *= dim[i];
    t.has_data = true;
    t.data.len = (size_t)numel * sizeof(float);
    t.data.data = (uint8_t *)data;
    t.has_trainable = true;
    t.trainable = trainable;
    w->crc = slim_crc32c(w->crc, data, t.data.len);
    w->n++;
    return write_msg(w, &t.base, err);
}

slim_status slim__rt_ckpt_writer_close(slim__rt_ckpt_writer *w, slim_error *err)
{
    slim_status st = SLIM_OK;
    if (w->n != w->expected)
        st = slim__error(err, SLIM_EINTERNAL, "%d tensors written, the header says %d", w->n,
                         w->expected);
    if (!st) {
        Slimckpt__CheckpointFooter f = SLIMCKPT__CHECKPOINT_FOOTER__INIT;
        f.n_tensors = w->n;
        f.data_crc32c = w->crc;
        st = write_msg(w, &f.base, err);
    }
    if (!st) {
        st = slim_tfrecord_writer_close(w->w, err); /* flushes and fsyncs */
        w->w = NULL;
    }
    if (!st && rename(w->tmp, w->path) != 0)
        st = slim__error(err, SLIM_EIO, "cannot rename %s to %s: %s", w->tmp, w->path,
                         strerror(errno));
    if (st) {
        slim__error_prefix(err,
                           "checkpoint %s not written (earlier checkpoints are intact): ", w->path);
        slim__rt_ckpt_writer_abort(w);
        return st;
    }
    slim__rt_fsync_dir(w->path);
    free(w->buf);
    free(w);
    return SLIM_OK;
}

void slim__rt_fsync_dir(const char *path)
{
    /* make a rename durable */
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
}

void slim__rt_ckpt_header(const slim__rt_ckpt_state *s, int n_tensors,
                          Slimckpt__CheckpointHeader *h)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    slimckpt__checkpoint_header__init(h);
    h->version = 1;
    h->format = FORMAT;
    h->global_step = s->global_step;
    h->has_seed = true;
    h->seed = s->seed;
    h->model_name = (char *)s->model_name;
    h->optimizer = (char *)s->optimizer;
    h->has_num_classes = true;
    h->num_classes = s->num_classes;
    h->has_wall_time = true;
    h->wall_time = (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
    h->has_num_threads = true;
    h->num_threads = s->num_threads;
    h->has_batch_size = true;
    h->batch_size = s->batch_size;
    h->has_replicas = true;
    h->replicas = s->replicas > 1 ? s->replicas : 1;
    if (s->by_file) {
        h->has_input_by_file = true;
        h->input_by_file = true;
        h->n_replica_positions = (size_t)s->n_rpos;
        h->replica_positions = s->rpos;
    }
    h->run_config = (char *)s->run_config;
    h->has_n_tensors = true;
    h->n_tensors = n_tensors;
    h->has_has_ema = true;
    h->has_ema = s->ema != NULL;
    if (s->has_pos) {
        h->has_pipeline_epoch = h->has_pipeline_index = h->has_pipeline_consumed = true;
        h->pipeline_epoch = s->pos.epoch;
        h->pipeline_index = s->pos.index;
        h->pipeline_consumed = s->pos.consumed;
        h->has_examples_seen = true;
        h->examples_seen = s->pos.consumed;
    }
}

slim_status slim__rt_ckpt_save(const char *path, const slim__rt_ckpt_state *s, slim_error *err)
{
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
    Slimckpt__CheckpointHeader h;
    slim__rt_ckpt_header(s, n_tensors, &h);
    slim__rt_ckpt_writer *w;
    slim_status st = slim__rt_ckpt_writer_open(path, &h, &w, err);
    if (st)
        return st;
    for (int i = 0; i < np && !st; i++) {
        const char *name;
        slim_tensor v;
        unsigned flags;
        slim_graph_param_at(s->g, i, &name, &v, &flags);
        st = slim__rt_ckpt_writer_add(w, name, SLIMCKPT__TENSOR_KIND__PARAM, NULL, 0, v.shape.rank,
                                      v.shape.dim, v.data, flags & SLIM_PARAM_TRAINABLE, err);
        for (int k = 0; s->p && k < s->n_slots && !st; k++) {
            slim_tensor sv;
            if (slim_program_slot(s->p, name, k, &sv, NULL) == SLIM_OK)
                st =
                    slim__rt_ckpt_writer_add(w, name, SLIMCKPT__TENSOR_KIND__SLOT, s->slot_names[k],
                                             k, sv.shape.rank, sv.shape.dim, sv.data, false, err);
        }
        if (!st && s->ema && s->ema[i])
            st = slim__rt_ckpt_writer_add(w, name, SLIMCKPT__TENSOR_KIND__EMA, NULL, 0,
                                          v.shape.rank, v.shape.dim, s->ema[i], false, err);
    }
    if (st) {
        slim__error_prefix(err,
                           "checkpoint %s not written (earlier checkpoints are intact): ", path);
        slim__rt_ckpt_writer_abort(w);
        return st;
    }
    return slim__rt_ckpt_writer_close(w, err);
}

/* ---- listing ---------------------------------------------------------------------- */

/* model.ckpt-STEP.slimckpt (slim) or model.ckpt-STEP.index (TensorFlow V2,
 * --save_format=tf) */
typedef struct listed {
    int64_t step;
    bool tf;
} listed;

static int by_step_desc(const void *a, const void *b)
{
    const listed *x = a, *y = b;
    if (x->step != y->step)
        return x->step < y->step ? 1 : -1;
    return (int)x->tf - (int)y->tf;
}

static bool parse_name(const char *nm, const char *suffix, int64_t *step)
{
    size_t l = strlen(nm), lp = strlen(SLIM__CKPT_PREFIX), ls = strlen(suffix);
    if (l <= lp + ls || strncmp(nm, SLIM__CKPT_PREFIX, lp) != 0 || strcmp(nm + l - ls, suffix) != 0)
        return false;
    char *end;
    long long v = strtoll(nm + lp, &end, 10);
    if (end != nm + l - ls || v < 0 || !isdigit((unsigned char)nm[lp]))
        return false;
    *step = v;
    return true;
}

static int list_all(const char *dir, listed **out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    listed *all = NULL;
    int n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        listed x = {0};
        if (parse_name(e->d_name, SLIM__CKPT_SUFFIX, &x.step))
            x.tf = false;
        else if (parse_name(e->d_name, SLIM__CKPT_TF_SUFFIX, &x.step))
            x.tf = true;
        else
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            listed *a = realloc(all, (size_t)cap * sizeof *a);
            if (!a)
                break;
            all = a;
        }
        all[n++] = x;
    }
    closedir(d);
    if (n)
        qsort(all, (size_t)n, sizeof *all, by_step_desc);
    *out = all;
    return n;
}

static void listed_path(const char *dir, const listed *x, char *path, size_t n)
{
    if (x->tf)
        snprintf(path, n, "%s/" SLIM__CKPT_PREFIX "%lld" SLIM__CKPT_TF_SUFFIX, dir,
                 (long long)x->step);
    else
        slim__rt_ckpt_path(dir, x->step, path, n);
}

int slim__rt_ckpt_list(const char *dir, int64_t *steps, char (*paths)[1024], int max)
{
    listed *all;
    int n = list_all(dir, &all);
    if (n < 0)
        return -1;
    int k = n < max ? n : max;
    for (int i = 0; i < k; i++) {
        steps[i] = all[i].step;
        if (paths)
            listed_path(dir, &all[i], paths[i], sizeof paths[i]);
    }
    free(all);
    return k;
}

/* Delete a checkpoint: the file, or a V2 prefix's index and data shards. */
static void remove_ckpt(const char *dir, const listed *x)
{
    char p[1200];
    listed_path(dir, x, p, sizeof p);
    unlink(p);
    if (!x->tf)
        return;
    char base[128];
    int bl = snprintf(base, sizeof base, SLIM__CKPT_PREFIX "%lld.data-", (long long)x->step);
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (!strncmp(e->d_name, base, (size_t)bl) && !strstr(e->d_name, ".tmp-")) {
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    if (d)
        closedir(d);
}

void slim__rt_ckpt_prune(const char *dir, int keep)
{
    listed *all;
    int n = list_all(dir, &all);
    for (int i = keep > 0 ? keep : 1; i < n; i++)
        remove_ckpt(dir, &all[i]);
    free(all);
    /* temporary files a crash left behind (not our own: we save synchronously) */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (strncmp(e->d_name, SLIM__CKPT_PREFIX, strlen(SLIM__CKPT_PREFIX)) == 0 &&
            strstr(e->d_name, ".tmp-")) {
            char p[2048];
            snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
            unlink(p);
        }
    }
    if (d)
        closedir(d);
}
