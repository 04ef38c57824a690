/* runtime/ckpt_convert.c - `slimrun ckpt convert IN OUT`: any checkpoint slim
 * reads into slim's format or TensorFlow's V1 / V2, by TF-Slim's names. */
#include "runtime/ckpt_convert.h"

#include "core/error.h"
#include "interop/tf_checkpoint.h"
#include "runtime/checkpoint.h"
#include "runtime/ckpt_restore.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void note(char *notes, size_t n, const char *fmt, ...) SLIM_PRINTF(3, 4);
static void note(char *notes, size_t n, const char *fmt, ...)
{
    if (!notes || !n)
        return;
    size_t l = strlen(notes);
    if (l + 1 >= n)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(notes + l, n - l, fmt, ap);
    va_end(ap);
}

/* The variable an entry belongs to (its own name for values). */
static const char *var_of(const slim__ckpt_entry *e)
{
    return e->var ? e->var : e->name;
}

static bool is_depthwise(const char *var)
{
    const char *seg = strrchr(var, '/');
    return !strcmp(seg ? seg + 1 : var, "depthwise_weights");
}

/* ---- to TensorFlow ------------------------------------------------------------ */

typedef struct extra {
    const char *name;
    int dtype;
    const void *data;
    size_t len;
} extra;

static slim_status to_tf(slim__ckpt *c, const char *out, slim__tfw_format f, int shards,
                         char *notes, size_t nn, slim_error *err)
{
    bool from_slim = slim__ckpt_format_of(c) == SLIM__CKPT_SLIM;
    /* slim's header and global_step, when the source has them only in its header */
    extra ex[2];
    int nex = 0;
    int64_t step = slim__ckpt_global_step(c);
    uint8_t *hb = NULL;
    const Slimckpt__CheckpointHeader *h = slim__ckpt_header(c);
    if (step >= 0 && slim__ckpt_find(c, "global_step") < 0)
        ex[nex++] = (extra){"global_step", SLIM__DT_INT64, &step, 8};
    if (h && slim__ckpt_find(c, SLIM__TF_HEADER_KEY) < 0) {
        size_t hl = protobuf_c_message_get_packed_size(&h->base);
        if (!(hb = malloc(8 + hl)))
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        uint64_t l = hl;
        memcpy(hb, &l, 8);
        protobuf_c_message_pack(&h->base, hb + 8);
        ex[nex++] = (extra){SLIM__TF_HEADER_KEY, SLIM__DT_STRING, hb, 8 + hl};
    }
    slim__tfw *w;
    slim_status st = slim__tfw_new(out, f, shards, &w, err);
    int i = 0, x = 0, n = slim__ckpt_count(c), skipped = 0;
    while (!st && (i < n || x < nex)) {
        /* merge the extras into the name order */
        const slim__ckpt_entry *e = i < n ? slim__ckpt_at(c, i) : NULL;
        if (x < nex && (!e || strcmp(ex[x].name, e->name) < 0)) {
            st = slim__tfw_add(w, ex[x].name, ex[x].dtype, 0, NULL, ex[x].data, ex[x].len, err);
            x++;
            continue;
        }
        i++;
        if (!strncmp(var_of(e), "slim_const/", 11)) {
            skipped++;
            continue;
        }
        if (!slim__dt_size(e->dtype) && e->dtype != SLIM__DT_STRING) {
            note(notes, nn, "skipped '%s' (%s values)\n", e->name, slim__dt_name(e->dtype));
            continue;
        }
        void *data;
        size_t len;
        st = slim__ckpt_read_raw(c, i - 1, &data, &len, err);
        if (st)
            break;
        int64_t dim[SLIM__CKPT_MAX_RANK];
        memcpy(dim, e->dim, sizeof dim);
        if (from_slim && e->rank == 4 && dim[2] == 1 && is_depthwise(var_of(e))) {
            dim[2] = dim[3]; /* slim (KH,KW,1,C) -> TF-Slim (KH,KW,C,1) */
            dim[3] = 1;
        }
        st = slim__tfw_add(w, e->name, e->dtype, e->rank, dim, data, len, err);
        free(data);
    }
    if (w)
        st = st ? (slim__tfw_free(w), st) : slim__tfw_finish(w, err);
    if (!st && skipped)
        note(notes, nn, "skipped %d slim_const/ tensors (the model's constants, not variables)\n",
             skipped);
    free(hb);
    return st;
}

/* ---- to slim ------------------------------------------------------------------ */

typedef struct plan_e {
    int i, kind, slot_index;
    const char *name, *slot;
    int rank;
    int64_t dim[SLIM_MAX_DIMS];
} plan_e;

static slim_status to_slim(slim__ckpt *c, const char *out, const slim_registry *reg, char *notes,
                           size_t nn, slim_error *err)
{
    slim_checkpoint_info info;
    slim__ckpt_fill_info(c, &info);
    const Slimckpt__CheckpointHeader *src = slim__ckpt_header(c);
    const char *opt = src ? src->optimizer : info.optimizer[0] ? info.optimizer : NULL;
    const slim_op_desc *od = opt && reg ? slim_registry_find(reg, opt) : NULL;
    int n = slim__ckpt_count(c), m = 0, dropped = 0;
    plan_e *p = calloc((size_t)n + 1, sizeof *p);
    if (!p)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    bool has_ema = false;
    for (int i = 0; i < n; i++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, i);
        if (e->kind == SLIM__CK_STEP || e->kind == SLIM__CK_META)
            continue; /* into the header */
        const char *why = NULL;
        if (!slim__dt_is_real(e->dtype))
            why = "not real numbers";
        else if (e->rank > SLIM_MAX_DIMS)
            why = "more dimensions than slim holds";
        else if (e->kind == SLIM__CK_OPT)
            why = "optimizer state slim computes itself";
        else if (e->kind == SLIM__CK_SLOT &&
                 (!od || e->slot_index < 0 || e->slot_index >= od->n_slots || !od->slots))
            why = "a slot of an optimizer slim does not know here";
        if (why) {
            if (dropped++ < 20)
                note(notes, nn, "dropped '%s' (%s)\n", e->name, why);
            continue;
        }
        plan_e *q = &p[m++];
        q->i = i;
        q->kind = e->kind == SLIM__CK_EMA    ? SLIMCKPT__TENSOR_KIND__EMA
                  : e->kind == SLIM__CK_SLOT ? SLIMCKPT__TENSOR_KIND__SLOT
                                             : SLIMCKPT__TENSOR_KIND__PARAM;
        q->name = var_of(e);
        has_ema = has_ema || e->kind == SLIM__CK_EMA;
        if (e->kind == SLIM__CK_SLOT) {
            q->slot = od->slots[e->slot_index].name;
            q->slot_index = e->slot_index;
        }
        q->rank = e->rank;
        memcpy(q->dim, e->dim, sizeof q->dim);
        if (q->rank == 4 && is_depthwise(q->name) && q->dim[3] >= 1 &&
            slim__ckpt_format_of(c) != SLIM__CKPT_SLIM) {
            q->dim[3] *= q->dim[2]; /* TF (KH,KW,C,M) -> slim (KH,KW,1,C*M) */
            q->dim[2] = 1;
        }
    }
    if (dropped > 20)
        note(notes, nn, "... %d dropped in all\n", dropped);
    Slimckpt__CheckpointHeader h;
    slim__rt_ckpt_state s = {.global_step = info.global_step,
                             .seed = info.seed,
                             .model_name = info.model_name[0] ? info.model_name : NULL,
                             .optimizer = opt,
                             .num_classes = info.num_classes};
    slim__rt_ckpt_header(&s, m, &h);
    h.has_ema = has_ema;
    if (src) { /* everything the source header says */
        h.seed = src->seed;
        h.run_config = src->run_config;
        h.has_num_threads = src->has_num_threads;
        h.num_threads = src->num_threads;
        h.has_batch_size = src->has_batch_size;
        h.batch_size = src->batch_size;
        h.has_pipeline_epoch = src->has_pipeline_epoch;
        h.pipeline_epoch = src->pipeline_epoch;
        h.has_pipeline_index = src->has_pipeline_index;
        h.pipeline_index = src->pipeline_index;
        h.has_pipeline_consumed = src->has_pipeline_consumed;
        h.pipeline_consumed = src->pipeline_consumed;
        h.has_examples_seen = src->has_examples_seen;
        h.examples_seen = src->examples_seen;
        h.has_wall_time = src->has_wall_time;
        h.wall_time = src->wall_time;
    }
    slim__rt_ckpt_writer *w;
    slim_status st = slim__rt_ckpt_writer_open(out, &h, &w, err);
    for (int k = 0; k < m && !st; k++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, p[k].i);
        if ((st = slim__ckpt_check_size(c, p[k].i, err)))
            break;
        float *data = malloc((size_t)e->numel * sizeof *data + 1);
        if (!data) {
            st = slim__error(err, SLIM_ENOMEM, "out of memory");
            break;
        }
        st = slim__ckpt_read_f32(c, p[k].i, data, e->numel, err);
        const char *seg = strrchr(p[k].name, '/');
        seg = seg ? seg + 1 : p[k].name;
        bool trainable = p[k].kind == SLIMCKPT__TENSOR_KIND__PARAM && strcmp(seg, "moving_mean") &&
                         strcmp(seg, "moving_variance");
        if (!st)
            st = slim__rt_ckpt_writer_add(w, p[k].name, p[k].kind, p[k].slot, p[k].slot_index,
                                          p[k].rank, p[k].dim, data, trainable, err);
        free(data);
    }
    free(p);
    if (st) {
        slim__rt_ckpt_writer_abort(w);
        return st;
    }
    return slim__rt_ckpt_writer_close(w, err);
}

slim_status slim__ckpt_convert(const char *in, const char *out, const char *format, int shards,
                               const slim_registry *reg, char *notes, size_t nn, slim_error *err)
{
    if (notes && nn)
        notes[0] = 0;
    size_t lo = strlen(out);
    char prefix[1200];
    snprintf(prefix, sizeof prefix, "%s", out);
    if (!format)
        format = lo > 9 && !strcmp(out + lo - 9, ".slimckpt") ? "slim" : "v2";
    if (!strcmp(format, "v2") && lo > 6 && !strcmp(out + lo - 6, ".index"))
        prefix[lo - 6] = 0;
    if (strcmp(format, "slim") && strcmp(format, "v1") && strcmp(format, "v2"))
        return slim__error(err, SLIM_EINVAL, "--format=%s: expected slim, v1 or v2", format);
    slim__ckpt *c;
    slim_status st = slim__ckpt_open(in, &c, err);
    if (st)
        return st;
    st = slim__ckpt_verify_all(c, err);
    if (!st && !strcmp(format, "slim"))
        st = to_slim(c, prefix, reg, notes, nn, err);
    else if (!st)
        st = to_tf(c, prefix, !strcmp(format, "v1") ? SLIM__TFW_V1 : SLIM__TFW_V2,
                   shards > 0 ? shards : 1, notes, nn, err);
    slim__ckpt_close(c);
    return st;
}
