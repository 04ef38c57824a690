/* runtime/ckpt_save_tf.c - `train --save_format=tf`: a run's state as a
 * TensorFlow V2 checkpoint (interop/tf_checkpoint.h) that
 * tf.train.load_checkpoint and TF-Slim's init_fn read, and from which slim
 * resumes exactly as from its own format (the run header travels as the
 * _SLIM_CHECKPOINT_HEADER string tensor). */
#include "runtime/checkpoint.h"

#include "core/error.h"
#include "interop/tf_checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct item {
    char name[1100];
    int dtype, rank;
    int64_t dim[SLIM_MAX_DIMS];
    const void *data;
    size_t len;
} item;

static int by_name(const void *a, const void *b)
{
    return strcmp(((const item *)a)->name, ((const item *)b)->name);
}

/* slim's depthwise filter (KH,KW,1,C*M) as TensorFlow's (KH,KW,C*M,1): the
 * same values, TF-Slim's shape for depth_multiplier 1. */
void slim__tf_shape_of(const char *name, const slim_shape *s, int *rank, int64_t *dim)
{
    *rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        dim[i] = s->dim[i];
    const char *seg = strrchr(name, '/');
    seg = seg ? seg + 1 : name;
    if (s->rank == 4 && s->dim[2] == 1 && !strcmp(seg, "depthwise_weights")) {
        dim[2] = s->dim[3];
        dim[3] = 1;
    }
}

static item *add(item **v, int *n, int *cap)
{
    if (*n == *cap) {
        int c = *cap ? 2 * *cap : 256;
        item *p = realloc(*v, (size_t)c * sizeof *p);
        if (!p)
            return NULL;
        *v = p;
        *cap = c;
    }
    item *it = &(*v)[(*n)++];
    memset(it, 0, sizeof *it);
    return it;
}

slim_status slim__rt_ckpt_save_tf(const char *prefix, const slim__rt_ckpt_state *s, slim_error *err)
{
    item *v = NULL;
    int n = 0, cap = 0;
    slim_status st = SLIM_OK;
    int np = slim_graph_param_count(s->g);
    for (int i = 0; i < np && !st; i++) {
        const char *name;
        slim_tensor t;
        unsigned flags;
        slim_graph_param_at(s->g, i, &name, &t, &flags);
        if (!strncmp(name, "slim_const/", 11))
            continue; /* the model's constants, not variables */
        for (int k = -2; k < s->n_slots && !st; k++) {
            slim_tensor sv = t;
            char suffix[80] = "";
            if (k == -1) {
                if (!s->ema || !s->ema[i])
                    continue;
                sv.data = s->ema[i];
                snprintf(suffix, sizeof suffix, "/ExponentialMovingAverage");
            } else if (k >= 0) {
                if (!s->p || slim_program_slot(s->p, name, k, &sv, NULL) != SLIM_OK)
                    continue;
                char sfx[64];
                slim__tf_slot_suffix(s->optimizer, k, sfx, sizeof sfx);
                snprintf(suffix, sizeof suffix, "/%s", sfx);
            }
            item *it = add(&v, &n, &cap);
            if (!it) {
                st = slim__error(err, SLIM_ENOMEM, "out of memory");
                break;
            }
            snprintf(it->name, sizeof it->name, "%s%s", name, suffix);
            it->dtype = SLIM__DT_FLOAT;
            slim__tf_shape_of(name, &sv.shape, &it->rank, it->dim);
            it->data = sv.data;
            it->len = (size_t)slim_shape_numel(&sv.shape) * sizeof(float);
        }
    }
    /* global_step, and slim's header as a string: u64 length, then the bytes */
    int64_t step = s->global_step;
    Slimckpt__CheckpointHeader h;
    slim__rt_ckpt_header(s, n, &h);
    size_t hl = protobuf_c_message_get_packed_size(&h.base);
    uint8_t *hb = malloc(8 + hl);
    item *gs = st ? NULL : add(&v, &n, &cap);
    item *hd = gs ? add(&v, &n, &cap) : NULL;
    if (!st && (!hb || !hd))
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
    if (!st) {
        uint64_t l = hl;
        memcpy(hb, &l, 8);
        protobuf_c_message_pack(&h.base, hb + 8);
        gs = &v[n - 2];
        snprintf(gs->name, sizeof gs->name, "global_step");
        gs->dtype = SLIM__DT_INT64;
        gs->data = &step;
        gs->len = 8;
        hd = &v[n - 1];
        snprintf(hd->name, sizeof hd->name, "%s", SLIM__TF_HEADER_KEY);
        hd->dtype = SLIM__DT_STRING;
        hd->rank = 0;
        hd->data = hb;
        hd->len = 8 + hl;
    }
    /* in name order, as TensorFlow's saver writes the data file */
    if (!st && n > 1)
        qsort(v, (size_t)n, sizeof *v, by_name);
    slim__tfw *w = NULL;
    if (!st)
        st = slim__tfw_new(prefix, SLIM__TFW_V2, 1, &w, err);
    for (int i = 0; i < n && !st; i++)
        st = slim__tfw_add(w, v[i].name, v[i].dtype, v[i].rank, v[i].dim, v[i].data, v[i].len, err);
    if (w)
        st = st ? (slim__tfw_free(w), st) : slim__tfw_finish(w, err);
    free(v);
    free(hb);
    if (st) {
        slim__error_prefix(err,
                           "checkpoint %s not written (earlier checkpoints are intact): ", prefix);
        return st;
    }
    slim__rt_fsync_dir(prefix);
    return SLIM_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

slim_status slim__rt_ckpt_write_state_file(const char *dir, slim_error *err)
{
    int64_t steps[256];
    char(*paths)[1024] = malloc(256 * sizeof *paths);
    if (!paths)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    int k = slim__rt_ckpt_list(dir, steps, paths, 256), m = 0;
    for (int i = 0; i < k; i++) {
        size_t l = strlen(paths[i]);
        if (l > 6 && !strcmp(paths[i] + l - 6, ".index"))
            steps[m++] = steps[i];
    }
    free(paths);
    if (m == 0)
        return SLIM_OK;
    qsort(steps, (size_t)m, sizeof *steps, cmp_i64);
    char path[1100], tmp[1200];
    snprintf(path, sizeof path, "%s/checkpoint", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp-%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "we");
    if (!f)
        return slim__error(err, SLIM_EIO, "cannot create %s: %s", tmp, strerror(errno));
    fprintf(f, "model_checkpoint_path: \"model.ckpt-%lld\"\n", (long long)steps[m - 1]);
    for (int i = 0; i < m; i++)
        fprintf(f, "all_model_checkpoint_paths: \"model.ckpt-%lld\"\n", (long long)steps[i]);
    bool bad = ferror(f) != 0;
    if (fclose(f) != 0 || bad || rename(tmp, path) != 0) {
        unlink(tmp);
        return slim__error(err, SLIM_EIO, "cannot write %s: %s", path, strerror(errno));
    }
    return SLIM_OK;
}
