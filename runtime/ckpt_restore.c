/* runtime/ckpt_restore.c - restoring a graph's parameters from a checkpoint
 * of any format (runtime/ckpt_reader.h), by TF-Slim's variable names, with
 * the answers to the mistakes people make most: names the model or the
 * checkpoint lacks (listed, with the nearest name and the flags that skip
 * them), shapes that differ (both shapes, and the flags for a new head), and
 * damaged files (file, offset, which check failed). */
#include "runtime/ckpt_restore.h"

#include "core/error.h"
#include "core/names.h"

#include <slim/model.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* ---- finding a parameter's tensor ---------------------------------------------- */

/* model name -> checkpoint name through the assignment map
 * ("CKPT_SCOPE=MODEL_SCOPE,...": TensorFlow's init_from_checkpoint map, "/" or
 * "" being the root). Returns false when no rule applies. */
static bool map_name(const char *map, const char *name, char *out, size_t n)
{
    if (!map || !map[0])
        return false;
    const char *s = map;
    while (*s) {
        while (*s == ',' || *s == ' ')
            s++;
        size_t len = strcspn(s, ",");
        const char *eq = memchr(s, '=', len);
        if (eq) {
            const char *ck = s, *mo = eq + 1;
            size_t lc = (size_t)(eq - s), lm = len - (size_t)(eq + 1 - s);
            while (lm && mo[lm - 1] == ' ')
                lm--;
            if (lc == 1 && ck[0] == '/')
                lc = 0;
            if (lm == 1 && mo[0] == '/')
                lm = 0;
            if (!strncmp(name, mo, lm)) {
                snprintf(out, n, "%.*s%s", (int)lc, ck, name + lm);
                return true;
            }
        }
        s += len;
    }
    return false;
}

/* TF-Slim names a layer's parameters weights/biases; tf.layers and Keras
 * name them kernel/bias. */
static const char *const aliases[][2] = {
    {"weights", "kernel"},
    {"biases", "bias"},
    {"depthwise_weights", "depthwise_kernel"},
    {"pointwise_weights", "pointwise_kernel"},
};

static int lookup(const slim__ckpt *c, const char *name, const char *suffix)
{
    char buf[1400];
    snprintf(buf, sizeof buf, "%s%s", name, suffix);
    int i = slim__ckpt_find(c, buf);
    if (i >= 0)
        return i;
    const char *seg = strrchr(name, '/');
    seg = seg ? seg + 1 : name;
    for (size_t a = 0; a < sizeof aliases / sizeof *aliases; a++)
        for (int dir = 0; dir < 2; dir++)
            if (!strcmp(seg, aliases[a][dir])) {
                snprintf(buf, sizeof buf, "%.*s%s%s", (int)(seg - name), name, aliases[a][!dir],
                         suffix);
                if ((i = slim__ckpt_find(c, buf)) >= 0)
                    return i;
            }
    return -1;
}

/* The checkpoint entry for model parameter nm (+ suffix), or -1. */
static int find_for(const slim__ckpt *c, const char *map, const char *nm, const char *suffix)
{
    char mapped[1200];
    if (map_name(map, nm, mapped, sizeof mapped))
        return lookup(c, mapped, suffix);
    return lookup(c, nm, suffix);
}

/* A depthwise filter: slim (KH,KW,1,C*M), TensorFlow (KH,KW,C,M), the same
 * values in the same order. */
static bool same_values_layout(const slim_shape *m, const slim__ckpt_entry *e, const char *nm)
{
    if (m->rank != e->rank)
        return false;
    bool same = true;
    for (int i = 0; i < m->rank; i++)
        same = same && m->dim[i] == e->dim[i];
    if (same)
        return true;
    const char *seg = strrchr(nm, '/');
    seg = seg ? seg + 1 : nm;
    return m->rank == 4 && strstr(seg, "depthwise") && m->dim[0] == e->dim[0] &&
           m->dim[1] == e->dim[1] && m->dim[2] == 1 && m->dim[3] == e->dim[2] * e->dim[3];
}

static void entry_shape(const slim__ckpt_entry *e, char *buf, size_t n)
{
    size_t o = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < e->rank && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? "," : "", (long long)e->dim[i]);
    if (o < n)
        snprintf(buf + o, n - o, ")");
}

/* ---- the plan ----------------------------------------------------------------- */

void slim__ckpt_plan_free(slim__ckpt_plan *p)
{
    free(p->src);
    free(p->status);
    free(p->used);
    memset(p, 0, sizeof *p);
}

slim_status slim__ckpt_plan_make(slim__ckpt *c, slim_graph *g, const slim_restore_opts *o,
                                 bool take_ema, slim__ckpt_plan *p, slim_error *err)
{
    memset(p, 0, sizeof *p);
    int np = slim_graph_param_count(g), ne = slim__ckpt_count(c);
    p->np = np;
    p->src = malloc(((size_t)np + 1) * sizeof *p->src);
    p->status = calloc((size_t)np + 1, 1);
    p->used = calloc((size_t)ne + 1, 1);
    if (!p->src || !p->status || !p->used) {
        slim__ckpt_plan_free(p);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    const char *excl = o ? o->exclude_scopes : NULL, *map = o ? o->assignment_map : NULL;
    for (int i = 0; i < np; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        p->src[i] = -1;
        if (!strncmp(nm, "slim_const/", 11)) {
            p->status[i] = SLIM__PLAN_CONST; /* the model's own constants */
            continue;
        }
        if (slim__in_scopes(nm, excl)) {
            p->status[i] = SLIM__PLAN_EXCLUDED;
            p->n_excluded++;
            continue;
        }
        int k = take_ema ? find_for(c, map, nm, SLIM__CKPT_EMA_SUFFIX) : -1;
        bool ema = k >= 0;
        if (k < 0)
            k = find_for(c, map, nm, "");
        if (k < 0) {
            p->status[i] = SLIM__PLAN_MISSING;
            p->n_missing++;
            continue;
        }
        const slim__ckpt_entry *e = slim__ckpt_at(c, k);
        p->src[i] = k;
        p->used[k] = 1;
        if (!slim__dt_is_real(e->dtype)) {
            p->status[i] = SLIM__PLAN_DTYPE;
            p->n_bad++;
        } else if (e->numel != slim_shape_numel(&v.shape) || !same_values_layout(&v.shape, e, nm)) {
            p->status[i] = SLIM__PLAN_SHAPE;
            p->n_bad++;
        } else {
            p->status[i] = ema ? SLIM__PLAN_EMA : SLIM__PLAN_LOAD;
            p->n_load++;
            if (ema) {
                p->n_ema++;
                int base = find_for(c, map, nm, ""); /* its value is not needed then */
                if (base >= 0)
                    p->used[base] = 1;
            }
        }
    }
    for (int k = 0; k < ne; k++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, k);
        if (p->used[k])
            continue;
        switch (e->kind) {
        case SLIM__CK_VALUE:
            if (slim__in_scopes(e->name, excl))
                p->n_unused_excluded++;
            else
                p->n_unused++;
            break;
        case SLIM__CK_EMA: p->n_ema_unused++; break;
        case SLIM__CK_SLOT:
        case SLIM__CK_OPT: p->n_opt++; break;
        default: break;
        }
    }
    return SLIM_OK;
}

/* ---- messages ------------------------------------------------------------------ */

static void report(const slim_restore_opts *o, const char *fmt, ...) SLIM_PRINTF(2, 3);
static void report(const slim_restore_opts *o, const char *fmt, ...)
{
    if (!o || !o->report || !o->report_size)
        return;
    size_t l = strlen(o->report);
    if (l + 1 >= o->report_size)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->report + l, o->report_size - l, fmt, ap);
    va_end(ap);
}

static int edit_distance(const char *a, const char *b)
{
    size_t na = strlen(a), nb = strlen(b);
    if (na > 200 || nb > 200)
        return 1 << 20;
    int row[201];
    for (size_t j = 0; j <= nb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[nb];
}

const char *slim__ckpt_nearest(const slim__ckpt *c, const slim__ckpt_plan *p, const char *nm)
{
    int best = -1, bd = 1 << 30;
    for (int k = 0; k < slim__ckpt_count(c); k++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, k);
        if (e->kind != SLIM__CK_VALUE || (p && p->used[k]))
            continue;
        int d = edit_distance(nm, e->name);
        if (d < bd) {
            bd = d;
            best = k;
        }
    }
    /* close enough to be a likely typo or a renamed scope */
    if (best < 0 || bd > (int)strlen(nm) / 2)
        return NULL;
    return slim__ckpt_at(c, best)->name;
}

/* The scope to exclude for a parameter: TF-Slim's head scope when the name
 * has one ("InceptionV3/Logits" for "InceptionV3/Logits/Conv2d_1c_1x1/weights",
 * "AuxLogits" alike), else its layer ("LeNet/fc4" for "LeNet/fc4/weights"). */
static int scope_len(const char *nm)
{
    for (const char *s = nm; *s;) {
        size_t l = strcspn(s, "/");
        if (s[l] == '/' && l >= 6 && !strncasecmp(s + l - 6, "logits", 6))
            return (int)(s + l - nm);
        s += l + (s[l] == '/');
    }
    const char *s = strrchr(nm, '/');
    return s ? (int)(s - nm) : (int)strlen(nm);
}

/* The library's message names no flag (eval and predict take none of
 * train's; train's fine-tuning appends --ignore_missing_vars to it). */
static slim_status missing_error(slim__ckpt *c, slim_graph *g, const slim__ckpt_plan *p,
                                 slim_error *err)
{
    char msg[1000];
    size_t o = 0;
    int shown = 0;
    for (int i = 0; i < p->np && o < sizeof msg; i++) {
        if (p->status[i] != SLIM__PLAN_MISSING)
            continue;
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        char b[96], nb[256];
        const char *near = slim__ckpt_nearest(c, p, nm);
        if (near)
            near = slim__printable(near, nb, sizeof nb);
        if (!shown)
            o += (size_t)snprintf(msg + o, sizeof msg - o,
                                  "%s has no '%s' (a parameter of the model the checkpoint lacks: "
                                  "is it a checkpoint of another model, or of another version?)",
                                  slim__ckpt_path(c), nm);
        if (p->n_missing == 1) {
            if (near && o < sizeof msg)
                o += (size_t)snprintf(msg + o, sizeof msg - o, "; the nearest name in it is '%s'",
                                      near);
            break;
        }
        if (!shown && o < sizeof msg)
            o += (size_t)snprintf(msg + o, sizeof msg - o,
                                  "; %d of the model's %d parameters are not in it:", p->n_missing,
                                  p->np);
        if (shown == 5) {
            if (o < sizeof msg)
                o += (size_t)snprintf(msg + o, sizeof msg - o, "\n  ... and %d more",
                                      p->n_missing - shown);
            break;
        }
        if (o < sizeof msg)
            o += (size_t)snprintf(msg + o, sizeof msg - o, "\n  '%s' %s%s%s%s", nm,
                                  slim__shape_str(&v.shape, b, sizeof b),
                                  near ? " (nearest in the checkpoint: '" : "", near ? near : "",
                                  near ? "')" : "");
        shown++;
    }
    if (p->n_missing > 1 && o < sizeof msg)
        snprintf(msg + o, sizeof msg - o,
                 "\n`slimrun ckpt diff MODEL CHECKPOINT` lists both sides");
    return slim__error(err, SLIM_ENOTFOUND, "%s", msg);
}

static slim_status mismatch_error(slim__ckpt *c, slim_graph *g, const slim__ckpt_plan *p, int i,
                                  slim_error *err)
{
    const char *nm;
    slim_tensor v;
    unsigned fl;
    slim_graph_param_at(g, i, &nm, &v, &fl);
    const slim__ckpt_entry *e = slim__ckpt_at(c, p->src[i]);
    char b1[128], b2[96];
    entry_shape(e, b1, sizeof b1);
    char en[256]; /* a name from the file, as text safe to print */
    slim__printable(e->name, en, sizeof en);
    if (p->status[i] == SLIM__PLAN_DTYPE)
        return slim__error(err, SLIM_ETYPE,
                           "%s: '%s' holds %s values in the checkpoint; the model's parameter is "
                           "float",
                           slim__ckpt_path(c), en, slim__dt_name(e->dtype));
    char hint[300] = "";
    int64_t cl = e->rank ? e->dim[e->rank - 1] : 0,
            ml = v.shape.rank ? v.shape.dim[v.shape.rank - 1] : 0;
    if (cl == ml + 1)
        snprintf(hint, sizeof hint,
                 "; the checkpoint's head has one class more: TF-Slim's ImageNet checkpoints "
                 "have 1001, class 0 being 'background'; to keep that head, use "
                 "--num_classes=%lld with --labels_offset=1",
                 (long long)cl);
    else if (cl != ml)
        snprintf(hint, sizeof hint, "; or --num_classes=%lld to keep the checkpoint's head",
                 (long long)cl);
    char other[1300] = "";
    if (strcmp(e->name, nm) != 0 && !(e->kind == SLIM__CK_EMA && e->var && !strcmp(e->var, nm)))
        snprintf(other, sizeof other, " (as '%s')", en);
    return slim__error(
        err, SLIM_ESHAPE,
        "%s: '%s' is %s in the checkpoint%s but %s in the model; to fine-tune with a new head "
        "(another class count), exclude its scope, e.g. --checkpoint_exclude_scopes=%.*s%s",
        slim__ckpt_path(c), nm, b1, other, slim__shape_str(&v.shape, b2, sizeof b2), scope_len(nm),
        nm, hint);
}

/* ---- restoring ---------------------------------------------------------------- */

static slim_status read_param(slim__ckpt *c, int k, float *dst, int64_t n, slim_error *err)
{
    return slim__ckpt_read_f32(c, k, dst, n, err);
}

slim_status slim__ckpt_restore_from(slim__ckpt *c, slim__rt_ckpt_state *s, bool resume,
                                    const slim_restore_opts *o, slim_error *err)
{
    slim_graph *g = s->g;
    int use_ema = resume ? 0 : o ? o->use_ema : -1;
    bool file_ema = slim__ckpt_has_ema(c);
    if (use_ema == 1 && !file_ema)
        return slim__error(err, SLIM_ENOTFOUND,
                           "%s has no moving averages (train with --moving_average_decay)",
                           slim__ckpt_path(c));
    slim__ckpt_plan p;
    slim_status st = slim__ckpt_plan_make(c, g, o, use_ema != 0 && file_ema, &p, err);
    if (st)
        return st;
    for (int i = 0; i < p.np && !st; i++)
        if (p.status[i] == SLIM__PLAN_SHAPE || p.status[i] == SLIM__PLAN_DTYPE)
            st = mismatch_error(c, g, &p, i, err);
    bool lenient = o && o->ignore_missing_vars && !resume;
    if (!st && p.n_missing && !lenient)
        st = missing_error(c, g, &p, err);
    for (int i = 0; i < p.np && !st; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        char b[96];
        switch (p.status[i]) {
        case SLIM__PLAN_LOAD:
        case SLIM__PLAN_EMA:
            st = read_param(c, p.src[i], v.data, slim_shape_numel(&v.shape), err);
            break;
        case SLIM__PLAN_EXCLUDED:
            report(o, "excluded %s %s\n", nm, slim__shape_str(&v.shape, b, sizeof b));
            break;
        case SLIM__PLAN_MISSING: report(o, "missing %s (kept its initial value)\n", nm); break;
        default: break;
        }
    }
    /* resuming: optimizer slots and moving averages too */
    for (int i = 0; resume && i < p.np && !st; i++) {
        const char *nm;
        slim_tensor v;
        unsigned fl;
        slim_graph_param_at(g, i, &nm, &v, &fl);
        if (p.status[i] != SLIM__PLAN_LOAD)
            continue;
        const Slimckpt__CheckpointHeader *hh = slim__ckpt_header(c);
        const char *op = s->optimizer ? s->optimizer : hh ? hh->optimizer : NULL;
        for (int k = 0; s->p && k < s->n_slots && !st; k++) {
            slim_tensor sv;
            if (slim_program_slot(s->p, nm, k, &sv, NULL) != SLIM_OK)
                continue;
            char suffix[64], sfx[72];
            if (op)
                slim__tf_slot_suffix(op, k, suffix, sizeof suffix);
            else
                snprintf(suffix, sizeof suffix, "%s", s->slot_names[k]);
            snprintf(sfx, sizeof sfx, "/%s", suffix);
            int e = find_for(c, NULL, nm, sfx);
            if (e >= 0 && slim__ckpt_at(c, e)->numel == slim_shape_numel(&sv.shape))
                st = read_param(c, e, sv.data, slim_shape_numel(&sv.shape), err);
        }
        if (!st && s->ema && s->ema[i]) {
            int e = find_for(c, NULL, nm, SLIM__CKPT_EMA_SUFFIX);
            if (e >= 0 && slim__ckpt_at(c, e)->numel == slim_shape_numel(&v.shape))
                st = read_param(c, e, s->ema[i], slim_shape_numel(&v.shape), err);
        }
    }
    if (!st) {
        for (int k = 0; k < slim__ckpt_count(c); k++) {
            const slim__ckpt_entry *e = slim__ckpt_at(c, k);
            char b[128];
            entry_shape(e, b, sizeof b);
            if (p.used[k] || e->kind != SLIM__CK_VALUE)
                continue;
            char en[256]; /* names from the file, as text safe to print */
            slim__printable(e->name, en, sizeof en);
            if (slim__in_scopes(e->name, o ? o->exclude_scopes : NULL))
                report(o, "excluded %s %s\n", en, b);
            else
                report(o, "unused %s (not in the model)\n", en);
        }
        if (!resume && p.n_opt)
            report(o,
                   "note: %d optimizer tensors of the checkpoint (slots such as NAME/Momentum, "
                   "NAME/Adam) are not restored when fine-tuning: the optimizer starts afresh\n",
                   p.n_opt);
    }
    if (!st) {
        const Slimckpt__CheckpointHeader *h = slim__ckpt_header(c);
        s->global_step = slim__ckpt_global_step(c) >= 0 ? slim__ckpt_global_step(c) : 0;
        s->has_ema = file_ema;
        s->replicas = h && h->has_replicas && h->replicas > 1 ? h->replicas : 1;
        s->by_file = h && h->has_input_by_file && h->input_by_file;
        s->n_rpos = 0;
        s->rpos = NULL;
        /* every process's input position (3 values each), when shared by file */
        if (resume && s->by_file && h->n_replica_positions % 3 == 0 &&
            h->n_replica_positions < 3u << 20 &&
            (s->rpos = malloc((h->n_replica_positions + 1) * sizeof *s->rpos))) {
            memcpy(s->rpos, h->replica_positions, h->n_replica_positions * sizeof *s->rpos);
            s->n_rpos = (int)h->n_replica_positions;
        }
        if (h) {
            s->seed = h->seed;
            s->has_pos = h->has_pipeline_epoch;
            s->pos.epoch = h->pipeline_epoch;
            s->pos.index = h->pipeline_index;
            s->pos.consumed = h->pipeline_consumed;
            s->num_classes = h->num_classes;
            s->num_threads = h->num_threads;
            s->batch_size = h->batch_size;
        }
    }
    slim__ckpt_plan_free(&p);
    return st;
}

slim_status slim__rt_ckpt_restore(const char *path, slim__rt_ckpt_state *s, bool resume,
                                  const slim_restore_opts *o, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = slim__ckpt_open(path, &c, err);
    if (st)
        return st;
    /* a damaged file must not half-apply: check every tensor first */
    st = slim__ckpt_verify_all(c, err);
    if (!st)
        st = slim__ckpt_restore_from(c, s, resume, o, err);
    slim__ckpt_close(c);
    return st;
}

/* ---- what a checkpoint is ----------------------------------------------------- */

/* "InceptionV3" -> "inception_v3", "MobilenetV1" -> "mobilenet_v1", "LeNet" -> "lenet" */
static void zoo_guess(const char *root, char *out, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; root[i] && o + 2 < n; i++) {
        char ch = root[i];
        if ((ch == 'V' || ch == 'v') && i > 0 && isalpha((unsigned char)root[i - 1]) &&
            isdigit((unsigned char)root[i + 1]))
            out[o++] = '_';
        out[o++] = (char)tolower((unsigned char)ch);
    }
    out[o] = 0;
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

void slim__ckpt_fill_info(const slim__ckpt *c, slim_checkpoint_info *info)
{
    if (!info)
        return;
    memset(info, 0, sizeof *info);
    const Slimckpt__CheckpointHeader *h = slim__ckpt_header(c);
    info->global_step = slim__ckpt_global_step(c) >= 0 ? slim__ckpt_global_step(c) : 0;
    info->has_ema = slim__ckpt_has_ema(c);
    info->n_tensors = slim__ckpt_count(c);
    if (h) {
        info->seed = h->seed;
        info->num_classes = h->num_classes;
        /* names as text safe to print */
        slim__printable(h->model_name, info->model_name, sizeof info->model_name);
        slim__printable(h->optimizer, info->optimizer, sizeof info->optimizer);
        run_config_model(h->run_config, &info->image_size, info->defines, sizeof info->defines);
        return;
    }
    /* a TensorFlow checkpoint: the zoo model its root scope names, if any */
    for (int k = 0; k < slim__ckpt_count(c); k++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, k);
        if (e->kind != SLIM__CK_VALUE || !strchr(e->name, '/'))
            continue;
        char root[100], guess[120], path[1024];
        snprintf(root, sizeof root, "%.*s", (int)strcspn(e->name, "/"), e->name);
        zoo_guess(root, guess, sizeof guess);
        slim_error e2;
        if (slim_model_find(guess, path, sizeof path, &e2) == SLIM_OK)
            snprintf(info->model_name, sizeof info->model_name, "%s", guess);
        break;
    }
    for (int k = 0; k < slim__ckpt_count(c); k++) {
        const slim__ckpt_entry *e = slim__ckpt_at(c, k);
        if (e->kind == SLIM__CK_SLOT && e->slot) {
            char tf[64];
            snprintf(tf, sizeof tf, "%.*s", (int)strcspn(e->slot, "_"), e->slot);
            static const char *const ops[] = {"momentum_update", "rmsprop_update",  "adam_update",
                                              "adagrad_update",  "adadelta_update", "ftrl_update"};
            for (size_t j = 0; j < sizeof ops / sizeof *ops; j++)
                if (!strcmp(slim__tf_optimizer_name(ops[j]), tf))
                    snprintf(info->optimizer, sizeof info->optimizer, "%s", ops[j]);
            break;
        }
    }
}

slim_status slim_checkpoint_verify(const char *path, slim_checkpoint_info *info, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = slim__ckpt_open(path, &c, err);
    if (st)
        return st;
    st = slim__ckpt_verify_all(c, err);
    if (!st)
        slim__ckpt_fill_info(c, info);
    slim__ckpt_close(c);
    return st;
}

slim_status slim_checkpoint_restore(const char *path, slim_graph *g, const slim_restore_opts *o,
                                    slim_checkpoint_info *info, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = slim__ckpt_open(path, &c, err);
    if (st)
        return st;
    st = slim__ckpt_verify_all(c, err);
    slim__rt_ckpt_state s = {.g = g};
    if (!st)
        st = slim__ckpt_restore_from(c, &s, false, o, err);
    if (!st)
        slim__ckpt_fill_info(c, info);
    slim__ckpt_close(c);
    return st;
}
