/* engine/compile.c - from a graph to a program.
 *
 *  1. prune to the nodes the loss and the marked outputs need;
 *  2. re-infer each node for the mode (training or not) and thread count;
 *     in inference a conv2d takes in the batch_norm, residual add and
 *     relu/relu6 nodes that consume its output alone (fuse): one step, no
 *     tensor between;
 *  3. autodiff: which tensors need gradients (trainable parameters within the
 *     trainable scopes, and what depends on them), backward steps in reverse
 *     order; a tensor with several consumers gets its first contribution in
 *     place and the others through a partial buffer plus an accumulate step;
 *  4. the optimizer update of a parameter right after its gradient is final
 *     (the one place where "this gradient is final" is known: the seam for
 *     overlapping an allreduce with the rest of backward later); with
 *     global-norm clipping, after backward: one step computes the norm of
 *     every gradient and the scale that each update op takes as an input;
 *  5. a memory plan: each buffer lives from the first to the last step that
 *     touches it; buffers are placed in one arena, largest first, at the
 *     lowest offset free over their lifetime. run allocates nothing. */
#include "engine/error.h"
#include "engine/gemm.h"
#include "engine/program.h"
#include "engine/registry.h"
#include "ops/act.h" /* the activations a fused conv2d applies */

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN 64

static int new_buf(slim_program *p, size_t bytes)
{
    if (p->n_bufs == p->cap_bufs) {
        int cap = p->cap_bufs ? 2 * p->cap_bufs : 256;
        slim__buffer *b = realloc(p->bufs, (size_t)cap * sizeof *b);
        if (!b)
            return -1;
        p->bufs = b;
        p->cap_bufs = cap;
    }
    slim__buffer *b = &p->bufs[p->n_bufs];
    b->bytes = (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
    if (b->bytes == 0)
        b->bytes = ALIGN;
    b->first = 1 << 30;
    b->last = -1;
    b->offset = 0;
    return p->n_bufs++;
}

/* A block of n views; returns the first index or -1 on out of memory. */
static int new_views(slim_program *p, int n)
{
    if (n == 0)
        return -1;
    while (p->n_views + n > p->cap_views) {
        int cap = p->cap_views ? 2 * p->cap_views : 512;
        slim_tensor *v = realloc(p->views, (size_t)cap * sizeof *v);
        int *vb = realloc(p->view_buf, (size_t)cap * sizeof *vb);
        if (v)
            p->views = v;
        if (vb)
            p->view_buf = vb;
        if (!v || !vb)
            return -2;
        p->cap_views = cap;
    }
    int first = p->n_views;
    p->n_views += n;
    for (int i = first; i < p->n_views; i++) {
        memset(&p->views[i], 0, sizeof p->views[i]);
        p->view_buf[i] = -1;
    }
    return first;
}

static slim__step *new_step(slim_program *p, slim__step_kind kind, int node)
{
    if (p->n_steps == p->cap_steps) {
        int cap = p->cap_steps ? 2 * p->cap_steps : 256;
        slim__step *s = realloc(p->steps, (size_t)cap * sizeof *s);
        if (!s)
            return NULL;
        p->steps = s;
        p->cap_steps = cap;
    }
    slim__step *s = &p->steps[p->n_steps++];
    memset(s, 0, sizeof *s);
    s->kind = kind;
    s->node = node;
    s->param = -1;
    s->v_in = s->v_out = s->v_saved = s->v_dout = s->v_din = -1;
    s->ws_buf = -1;
    s->lr_mult = 1;
    return s;
}

static void set_view(slim_program *p, int v, slim_tensor_desc d, int buf, void *data)
{
    p->views[v].dtype = d.dtype;
    p->views[v].shape = d.shape;
    p->views[v].data = data;
    p->view_buf[v] = buf;
}

static size_t desc_bytes(const slim_tensor_desc *d)
{
    return (size_t)slim_shape_numel(&d->shape) * slim_dtype_size(d->dtype);
}

static bool in_scopes(const char *name, const char *scopes)
{
    if (!scopes || !scopes[0])
        return true;
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

/* Internal kernels. */
static void k_acc(const slim_kernel_ctx *c)
{
    const float *x = c->in[0].data;
    float *y = c->out[0].data;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape), c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; i < hi; i++)
        y[i] += x[i];
}

static void k_seed(const slim_kernel_ctx *c)
{
    if (c->ith == 0)
        ((float *)c->out[0].data)[0] = 1.0f;
}

/* Global-norm clipping (tf.clip_by_global_norm): inputs are the gradients of
 * every trained parameter; out[0] = clip / max(norm, clip) (NaN when the norm
 * is not finite, as TF), out[1] = the norm. The sum of squares is taken in
 * fixed chunks of GNORM_CHUNK elements, each in double, and the chunks are
 * added in order by one thread: the same bits at any thread count. */
#define GNORM_CHUNK 4096

typedef struct gnorm_params {
    float clip;
    int64_t n_chunks;
} gnorm_params;

static int64_t gnorm_chunks(const slim_tensor *t)
{
    return (slim_shape_numel(&t->shape) + GNORM_CHUNK - 1) / GNORM_CHUNK;
}

static void k_global_norm(const slim_kernel_ctx *c)
{
    const gnorm_params *gp = c->params;
    double *part = c->ws;
    int64_t lo, hi, first = 0; /* first chunk of tensor t */
    slim_split(gp->n_chunks, c->ith, c->nth, &lo, &hi);
    int t = 0;
    for (int64_t j = lo; j < hi; j++) {
        while (j - first >= gnorm_chunks(&c->in[t]))
            first += gnorm_chunks(&c->in[t++]);
        const float *g = c->in[t].data;
        int64_t n = slim_shape_numel(&c->in[t].shape), a = (j - first) * GNORM_CHUNK;
        int64_t e = a + GNORM_CHUNK < n ? a + GNORM_CHUNK : n;
        double ss = 0;
        for (int64_t i = a; i < e; i++)
            ss += (double)g[i] * g[i];
        part[j] = ss;
    }
    c->sync(c);
    if (c->ith != 0)
        return;
    double total = 0;
    for (int64_t j = 0; j < gp->n_chunks; j++)
        total += part[j];
    float norm = (float)sqrt(total);
    *(float *)c->out[0].data = !isfinite(norm) ? NAN : norm > gp->clip ? gp->clip / norm : 1.0f;
    *(float *)c->out[1].data = norm;
}

typedef struct build {
    slim_program *p;
    slim_graph *g;
    const slim_compile_opts *o;
    const slim_op_desc *opt; /* optimizer op or NULL */
    slim__attr_set opt_attrs;
    bool *needed, *req, *live, *bwd, *node_training;
    /* inference fusion, per node: the tensor a conv2d writes in place of its
     * output, the batch_norm node it folds in (-1: none), the activation
     * (ACT_*) and the residual tensor (-1: none) */
    int *fuse_out, *fuse_bn, *fuse_act, *fuse_res;
    bool *gone, *fused; /* per tensor: no buffer; written by a fused conv2d */
    /* per node, a pointwise conv2d that ends a chain (conv2d_chain): the
     * depthwise conv2d before it and the pointwise one before that (-1: none) */
    int *chain_d, *chain_a;
    const slim_op_desc *chain_op;
    int *contrib, *seen;
    bool plan_only;            /* slim_graph_plan: sizes only, no arena, slots or threads */
    int *deferred, n_deferred; /* clipping: parameters to update after the norm */
    int scale_view;            /* clipping: the view of the gradient scale */
    slim_error *err;
} build;

static slim_status oom(slim_error *err)
{
    return slim__error(err, SLIM_ENOMEM, "out of memory while compiling");
}

/* Buffer of a graph tensor's value (arena) or its parameter storage. */
static void bind_value(build *b, int v, slim_tid t)
{
    slim_program *p = b->p;
    const slim__tinfo *ti = &b->g->tensors[t];
    if (ti->kind == SLIM__T_PARAM)
        set_view(p, v, ti->d, -1, b->g->params[ti->producer].data);
    else
        set_view(p, v, ti->d, p->tbuf[t], NULL);
}

static slim_status add_update(build *b, int param)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    slim__param *pa = &g->params[param];
    const slim_tensor_desc pd = g->tensors[pa->t].d;
    bool clip = b->o->clip_gradient_norm > 0;
    int n_in = 2 + p->n_slots + clip;
    slim_tensor_desc in[SLIM_MAX_INPUTS];
    for (int i = 0; i < n_in; i++)
        in[i] = pd;
    if (clip)
        in[n_in - 1] = (slim_tensor_desc){SLIM_F32, {0}};
    /* infer result stored after the per-node ones */
    slim__infer_result *r = &p->infer[g->n_nodes + param];
    slim_status st =
        slim__node_infer(b->opt, &b->opt_attrs, in, n_in, true, p->nth, pa->name, r, b->err);
    if (st != SLIM_OK)
        return st;
    slim__step *s = new_step(p, SLIM__STEP_UPDATE, -1);
    if (!s)
        return oom(b->err);
    s->param = param;
    s->training = true;
    s->d = b->opt;
    s->params = r->params;
    s->n_in = n_in;
    s->n_out = r->n_out;
    s->lr_mult = pa->lr_mult;
    s->node_id = (uint32_t)(g->n_nodes + param);
    s->name = pa->name;
    int vi = new_views(p, n_in), vo = new_views(p, r->n_out);
    if (vi < 0 || vo < 0)
        return oom(b->err);
    s = &p->steps[p->n_steps - 1];
    s->v_in = vi;
    s->v_out = vo;
    set_view(p, vi, pd, -1, pa->data);
    set_view(p, vi + 1, pd, p->gbuf[pa->t], NULL);
    for (int k = 0; k < p->n_slots; k++)
        set_view(p, vi + 2 + k, pd, -1, p->slots ? p->slots[param * p->n_slots + k] : NULL);
    if (clip)
        set_view(p, vi + n_in - 1, in[n_in - 1], p->view_buf[b->scale_view], NULL);
    for (int j = 0; j < r->n_out; j++) {
        int ob = new_buf(p, desc_bytes(&r->out[j]));
        if (ob < 0)
            return oom(b->err);
        set_view(p, vo + j, r->out[j], ob, NULL);
    }
    if (r->ws_bytes) {
        s->ws_buf = new_buf(p, r->ws_bytes);
        s->ws_size = r->ws_bytes;
        if (s->ws_buf < 0)
            return oom(b->err);
    }
    bool is_ref;
    s->fn = slim__pick_kernel(b->opt, false, false, &is_ref);
    s->single = is_ref;
    p->n_upd++;
    return SLIM_OK;
}

/* Training across processes (slim_compile_opts.collective): a step right
 * after the one that completes a trained parameter's gradient hands it to
 * grad_ready (the allreduce of its bucket can start while backward goes on),
 * and a step before its update copies the averaged gradient back (grad_wait
 * returns once its bucket is done). node_id carries the parameter index. */
static void k_grad_ready(const slim_kernel_ctx *c)
{
    const slim_program *p = c->priv;
    p->coll.grad_ready(p->coll.user, (int)c->node_id, c->in[0].data,
                       slim_shape_numel(&c->in[0].shape));
}

static void k_grad_wait(const slim_kernel_ctx *c)
{
    slim_program *p = c->priv;
    if (c->ith == 0)
        p->coll_src = p->coll.grad_wait(p->coll.user, (int)c->node_id, &p->coll_scale);
    c->sync(c);
    const float *src = p->coll_src, scale = p->coll_scale;
    float *g = c->out[0].data;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&c->out[0].shape), c->ith, c->nth, &lo, &hi);
    for (int64_t i = lo; src && i < hi; i++)
        g[i] = src[i] * scale;
}

static slim_status add_coll_step(build *b, int param, bool ready)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    slim_tid t = g->params[param].t;
    slim__step *s = new_step(p, ready ? SLIM__STEP_BWD : SLIM__STEP_UPDATE, -1);
    int v = new_views(p, 1);
    if (!s || v < 0)
        return oom(b->err);
    s = &p->steps[p->n_steps - 1];
    s->fn = ready ? k_grad_ready : k_grad_wait;
    s->single = ready;
    s->name = g->params[param].name;
    s->op = ready ? "allreduce_start" : "allreduce_wait";
    s->node_id = (uint32_t)param;
    s->reads_in = ~0u;
    s->n_in = ready;
    s->n_out = !ready;
    if (ready)
        s->v_in = v;
    else
        s->v_out = v;
    set_view(p, v, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape}, p->gbuf[t], NULL);
    return SLIM_OK;
}

/* Check that b->opt is an update op (param, grad, its slots, maybe a gradient
 * scale), set p->n_slots and each slot's initial value (its descriptor's
 * constant, or the attribute it names). */
static slim_status update_op_slots(build *b, float *slot_init)
{
    const slim_op_desc *d = b->opt;
    int n = d->slots ? d->n_slots : d->min_inputs - 2;
    if (!(d->flags & SLIM_OP_UPDATE) || n < 0 || d->min_inputs != 2 + n || d->max_inputs > 3 + n)
        return slim__error(b->err, SLIM_EINVAL,
                           "'%s' is not an optimizer update op (inputs: param, grad, %d slot%s "
                           "as its descriptor declares, and an optional gradient scale)",
                           d->name, n, n == 1 ? "" : "s");
    if (b->o->clip_gradient_norm > 0 && d->max_inputs != 3 + n)
        return slim__error(b->err, SLIM_EUNSUPPORTED,
                           "update op '%s' takes no gradient scale (max_inputs %d, not %d), "
                           "which global-norm clipping needs",
                           d->name, d->max_inputs, 3 + n);
    b->p->n_slots = n;
    for (int k = 0; k < n; k++) {
        slot_init[k] = 0;
        if (!d->slots)
            continue;
        const slim_slot_spec *sp = &d->slots[k];
        slot_init[k] = (float)sp->init;
        if (!sp->init_attr)
            continue;
        const slim__attr_value *v = slim__attrs_get(&b->opt_attrs, sp->init_attr);
        if (!v || v->type != SLIM_ATTR_FLOAT || v->n != 1)
            return slim__error(b->err, SLIM_EINVAL,
                               "update op '%s': slot '%s' starts at attribute '%s', which is "
                               "not one of its float attributes",
                               d->name, sp->name ? sp->name : "?", sp->init_attr);
        slot_init[k] = (float)v->floats[0];
    }
    return SLIM_OK;
}

/* The updates deferred to after backward: across processes, each after the
 * wait for its averaged gradient; with global-norm clipping, the norm step
 * over every gradient (after all the waits) and then the updates, each
 * taking its scale. */
static slim_status add_deferred_updates(build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    if (b->n_deferred == 0)
        return SLIM_OK;
    bool clip = b->o->clip_gradient_norm > 0;
    for (int k = 0; k < b->n_deferred; k++) {
        slim_status st = p->has_coll ? add_coll_step(b, b->deferred[k], false) : SLIM_OK;
        if (st == SLIM_OK && !clip)
            st = add_update(b, b->deferred[k]);
        if (st != SLIM_OK)
            return st;
    }
    if (!clip)
        return SLIM_OK;
    int64_t chunks = 0;
    for (int k = 0; k < b->n_deferred; k++)
        chunks +=
            (slim_shape_numel(&g->tensors[g->params[b->deferred[k]].t].d.shape) + GNORM_CHUNK - 1) /
            GNORM_CHUNK;
    slim__infer_result *r = &p->infer[g->n_nodes + g->n_params];
    gnorm_params *gp = calloc(1, sizeof *gp);
    if (!gp)
        return oom(b->err);
    gp->clip = b->o->clip_gradient_norm;
    gp->n_chunks = chunks;
    r->params = gp;
    slim__step *s = new_step(p, SLIM__STEP_UPDATE, -1);
    int vi = new_views(p, b->n_deferred), vo = new_views(p, 2);
    int ws = new_buf(p, (size_t)(chunks > 0 ? chunks : 1) * sizeof(double));
    int sb = new_buf(p, sizeof(float)), nb = new_buf(p, sizeof(float));
    if (!s || vi < 0 || vo < 0 || ws < 0 || sb < 0 || nb < 0)
        return oom(b->err);
    s = &p->steps[p->n_steps - 1];
    s->fn = k_global_norm;
    s->params = gp;
    s->name = "global_norm";
    s->n_in = b->n_deferred;
    s->n_out = 2;
    s->v_in = vi;
    s->v_out = vo;
    s->ws_buf = ws;
    s->ws_size = (size_t)(chunks > 0 ? chunks : 1) * sizeof(double);
    s->node_id = (uint32_t)(g->n_nodes + g->n_params);
    for (int k = 0; k < b->n_deferred; k++) {
        slim_tid t = g->params[b->deferred[k]].t;
        set_view(p, vi + k, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape}, p->gbuf[t], NULL);
    }
    slim_tensor_desc scalar = {SLIM_F32, {0}};
    set_view(p, vo, scalar, sb, NULL);
    set_view(p, vo + 1, scalar, nb, NULL);
    b->scale_view = vo;
    for (int k = 0; k < b->n_deferred; k++) {
        slim_status st = add_update(b, b->deferred[k]);
        if (st != SLIM_OK)
            return st;
    }
    return SLIM_OK;
}

static slim_status plan(slim_program *p, bool allocate, slim_error *err);

/* ---- inference fusion ------------------------------------------------------------ */

static bool is_op(const slim__node *nd, const char *name)
{
    return strcmp(nd->d->name, name) == 0;
}

/* The node's activation attribute (ACT_NONE when it has none). */
static int node_act(const slim__node *nd)
{
    const slim__attr_value *v = slim__attrs_get(&nd->attrs, "activation");
    return v && v->type == SLIM_ATTR_STRING ? act_parse(v->str) : ACT_NONE;
}

static const char *const act_names[] = {
    [ACT_NONE] = "none", [ACT_RELU] = "relu", [ACT_RELU6] = "relu6"};

static bool same_desc(const slim_tensor_desc *a, const slim_tensor_desc *b)
{
    return a->dtype == b->dtype && a->shape.rank == b->shape.rank &&
           !memcmp(a->shape.dim, b->shape.dim, (size_t)a->shape.rank * sizeof(int64_t));
}

/* Whether tensor t exists before node n runs: an input, a parameter, or the
 * output of an earlier node (a fused conv2d runs at its own place, before
 * the nodes it took in). */
static bool ready_before(const slim_graph *g, slim_tid t, int n)
{
    const slim__tinfo *ti = &g->tensors[t];
    return ti->kind != SLIM__T_NODE || ti->producer < n;
}

/* A conv2d (no batch norm, residual or activation of its own) whose output
 * has one consumer, a batch_norm (x input only), an add of two tensors of
 * one shape (the residual) or a relu/relu6, takes it in; then the same again
 * for that node's output (conv -> batch_norm -> add -> relu), at most one of
 * each, in that order. The residual must be computed before the conv runs
 * (its producer comes first in the graph). A tensor the caller reads
 * (marked) is never fused away. */
static slim_status find_fusions(build *b)
{
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    int *uses = calloc((size_t)nt + 1, sizeof *uses), *user = calloc((size_t)nt + 1, sizeof *user);
    if (!uses || !user) {
        free(uses);
        free(user);
        return oom(b->err);
    }
    for (int n = 0; n < nn; n++)
        for (int i = 0; b->needed[n] && i < g->nodes[n].n_in; i++) {
            uses[g->nodes[n].in[i]]++;
            user[g->nodes[n].in[i]] = n;
        }
    for (int n = 0; n < nn; n++) {
        const slim__node *nd = &g->nodes[n];
        if (!b->needed[n] || !is_op(nd, "conv2d") || nd->n_in > 3 || node_act(nd) != ACT_NONE ||
            slim__attrs_get(&nd->attrs, "batch_norm")->ints[0] ||
            slim__attrs_get(&nd->attrs, "residual")->ints[0])
            continue;
        int bn = -1, act = ACT_NONE, res = -1;
        slim_tid t = nd->out[0];
        for (;;) {
            const slim__tinfo *ti = &g->tensors[t];
            if (uses[t] != 1 || ti->marked || t == g->loss || ti->d.dtype != SLIM_F32)
                break;
            const slim__node *md = &g->nodes[user[t]];
            slim_tid other = md->n_in == 2 ? md->in[md->in[0] == t] : -1;
            if (bn < 0 && res < 0 && act == ACT_NONE && is_op(md, "batch_norm") && md->n_in == 5 &&
                md->in[0] == t)
                bn = user[t], act = node_act(md);
            else if (res < 0 && act == ACT_NONE && is_op(md, "add") && other >= 0 &&
                     ready_before(g, other, n) && same_desc(&g->tensors[other].d, &ti->d))
                res = other, act = node_act(md);
            else if (act == ACT_NONE && md->n_in == 1 && (is_op(md, "relu") || is_op(md, "relu6")))
                act = act_parse(md->d->name);
            else
                break;
            b->needed[user[t]] = false;
            b->gone[t] = true;
            t = md->out[0];
        }
        if (t == nd->out[0])
            continue;
        b->fused[t] = true;
        b->fuse_out[n] = t;
        b->fuse_bn[n] = bn;
        b->fuse_act[n] = act;
        b->fuse_res[n] = res;
    }
    free(uses);
    free(user);
    return SLIM_OK;
}

/* A node's inputs; for a fused conv2d x, w, [b], then the batch norm's gamma,
 * beta, moving_mean, moving_var. */
static int node_inputs(const build *b, int n, slim_tid *in)
{
    const slim__node *nd = &b->g->nodes[n];
    if (b->chain_d[n] >= 0) {
        /* x, then each conv's w and batch norm, then the residual */
        const int convs[3] = {b->chain_a[n], b->chain_d[n], n};
        int n_in = 0;
        in[n_in++] = b->g->nodes[convs[0] >= 0 ? convs[0] : convs[1]].in[0];
        for (int k = 0; k < 3; k++) {
            if (convs[k] < 0)
                continue;
            in[n_in++] = b->g->nodes[convs[k]].in[1];
            for (int i = 1; i < 5; i++)
                in[n_in++] = b->g->nodes[b->fuse_bn[convs[k]]].in[i];
        }
        if (b->fuse_res[n] >= 0)
            in[n_in++] = b->fuse_res[n];
        return n_in;
    }
    int n_in = nd->n_in;
    memcpy(in, nd->in, (size_t)n_in * sizeof *in);
    if (b->fuse_bn[n] >= 0)
        for (int i = 1; i < 5; i++)
            in[n_in++] = b->g->nodes[b->fuse_bn[n]].in[i];
    if (b->fuse_res[n] >= 0)
        in[n_in++] = b->fuse_res[n];
    return n_in;
}

/* The fused conv2d's attributes: the conv's with batch_norm,
 * batch_norm_epsilon, residual and activation set. set->values is the caller's to free
 * (the values it points to belong to the graph, to the caller or are static). */
static slim_status fused_attrs(build *b, int n, slim__attr_set *set, int64_t flag[2], double *eps)
{
    const slim__node *nd = &b->g->nodes[n];
    int bn = b->fuse_bn[n];
    flag[0] = bn >= 0;
    flag[1] = b->fuse_res[n] >= 0;
    *eps = 0.001;
    if (bn >= 0) {
        const slim__attr_value *e = slim__attrs_get(&b->g->nodes[bn].attrs, "epsilon");
        if (e && e->type == SLIM_ATTR_FLOAT)
            *eps = e->floats[0];
    }
    const slim_op_desc *d = nd->d;
    set->desc = d;
    set->values = malloc((size_t)(d->n_attrs ? d->n_attrs : 1) * sizeof *set->values);
    if (!set->values)
        return oom(b->err);
    memcpy(set->values, nd->attrs.values, (size_t)d->n_attrs * sizeof *set->values);
    for (int i = 0; i < d->n_attrs; i++) {
        slim__attr_value *v = &set->values[i];
        if (!strcmp(d->attrs[i].name, "batch_norm"))
            v->ints = &flag[0];
        else if (!strcmp(d->attrs[i].name, "residual"))
            v->ints = &flag[1];
        else if (!strcmp(d->attrs[i].name, "batch_norm_epsilon"))
            v->floats = eps;
        else if (!strcmp(d->attrs[i].name, "activation"))
            v->str = (char *)act_names[b->fuse_act[n]];
    }
    return SLIM_OK;
}

/* What a fused step runs, for profiles. */
static const char *fused_name(const build *b, int n)
{
    static const char *const names[2][2][3] = {
        {{"conv2d", "conv2d+relu", "conv2d+relu6"},
         {"conv2d+add", "conv2d+add+relu", "conv2d+add+relu6"}},
        {{"conv2d+batch_norm", "conv2d+batch_norm+relu", "conv2d+batch_norm+relu6"},
         {"conv2d+batch_norm+add", "conv2d+batch_norm+add+relu", "conv2d+batch_norm+add+relu6"}}};
    return names[b->fuse_bn[n] >= 0][b->fuse_res[n] >= 0][b->fuse_act[n]];
}

/* ---- chains: a depthwise-separable block in one step (conv2d_chain) ---------------- */

/* Whether node n is a conv2d fused with a batch norm, without a bias, that a
 * chain can take: pointwise (1x1, stride 1, no padding, no groups) or
 * depthwise (groups == C == O, SAME or VALID, no dilation). */
static bool chain_conv(const build *b, int n, bool depthwise)
{
    const slim_graph *g = b->g;
    const slim__node *nd = &g->nodes[n];
    if (!b->needed[n] || !is_op(nd, "conv2d") || b->fuse_out[n] < 0 || b->fuse_bn[n] < 0 ||
        nd->n_in != 2)
        return false;
    const slim_shape *x = &g->tensors[nd->in[0]].d.shape, *w = &g->tensors[nd->in[1]].d.shape;
    const int64_t *st = slim__attrs_get(&nd->attrs, "strides")->ints,
                  *dl = slim__attrs_get(&nd->attrs, "dilations")->ints,
                  *pads = slim__attrs_get(&nd->attrs, "pads")->ints,
                  groups = slim__attrs_get(&nd->attrs, "groups")->ints[0];
    const bool explicit_pads = !strcmp(slim__attrs_get(&nd->attrs, "padding")->str, "EXPLICIT");
    if (x->rank != 4 || w->rank != 4 || dl[0] != 1 || dl[1] != 1)
        return false;
    if (depthwise)
        return groups == x->dim[3] && w->dim[2] == 1 && w->dim[3] == x->dim[3] && !explicit_pads;
    return groups == 1 && w->dim[0] == 1 && w->dim[1] == 1 && st[0] == 1 && st[1] == 1 &&
           !(pads[0] | pads[1] | pads[2] | pads[3]);
}

/* Node `node`, whose output t a chain computes inside, runs no more, nor
 * does t get a buffer. */
static void absorb(build *b, int node, slim_tid t)
{
    b->needed[node] = false;
    b->fused[t] = false;
    b->gone[t] = true;
}

/* After find_fusions: a fused pointwise conv2d whose input only a fused
 * depthwise conv2d writes, and only it reads, takes that one in, and the
 * same again for a fused pointwise conv2d before the depthwise one
 * (MobileNet v2's expand -> depthwise -> project, v1's depthwise ->
 * pointwise). Not with the reference kernels (SLIM_KERNELS=ref runs the
 * convolutions one by one). */
static slim_status find_chains(build *b)
{
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    b->chain_op = slim_registry_find(g->reg, "conv2d_chain");
    if (!b->chain_op || slim__force_ref())
        return SLIM_OK;
    int *uses = calloc((size_t)nt + 1, sizeof *uses),
        *writer = malloc(((size_t)nt + 1) * sizeof(int));
    if (!uses || !writer) {
        free(uses);
        free(writer);
        return oom(b->err);
    }
    for (int t = 0; t < nt; t++)
        writer[t] = -1;
    for (int n = 0; n < nn; n++) {
        slim_tid in[SLIM_MAX_INPUTS];
        for (int i = 0, k = b->needed[n] ? node_inputs(b, n, in) : 0; i < k; i++)
            uses[in[i]]++;
        if (b->needed[n] && b->fuse_out[n] >= 0)
            writer[b->fuse_out[n]] = n;
    }
    for (int n = 0; n < nn; n++) {
        if (!chain_conv(b, n, false))
            continue;
        const slim_tid td = g->nodes[n].in[0];
        const int d = writer[td];
        if (d < 0 || uses[td] != 1 || g->tensors[td].marked || !chain_conv(b, d, true) ||
            b->fuse_res[d] >= 0)
            continue;
        const slim_tid ta = g->nodes[d].in[0];
        const int a = writer[ta];
        const bool expand = a >= 0 && uses[ta] == 1 && !g->tensors[ta].marked &&
                            chain_conv(b, a, false) && b->fuse_res[a] < 0 && b->chain_d[a] < 0;
        b->chain_d[n] = d;
        absorb(b, d, td);
        if (expand) {
            b->chain_a[n] = a;
            absorb(b, a, ta);
        }
    }
    free(uses);
    free(writer);
    return SLIM_OK;
}

/* Storage for the chain's attribute values that are not the graph's. */
typedef struct chain_vals {
    int64_t expand, residual;
    double eps[3];
} chain_vals;

/* The batch norm epsilon of fused conv n. */
static double bn_eps(const build *b, int n)
{
    const slim__attr_value *e = slim__attrs_get(&b->g->nodes[b->fuse_bn[n]].attrs, "epsilon");
    return e && e->type == SLIM_ATTR_FLOAT ? e->floats[0] : 0.001;
}

/* conv2d_chain's attributes for chain n (set->values is the caller's to free). */
static slim_status chain_attrs(build *b, int n, slim__attr_set *set, chain_vals *cv)
{
    const int a = b->chain_a[n], dn = b->chain_d[n];
    const slim__node *dw = &b->g->nodes[dn];
    const slim_op_desc *d = b->chain_op;
    cv->expand = a >= 0;
    cv->residual = b->fuse_res[n] >= 0;
    cv->eps[0] = a >= 0 ? bn_eps(b, a) : 0.001;
    cv->eps[1] = bn_eps(b, dn);
    cv->eps[2] = bn_eps(b, n);
    set->desc = d;
    set->values = calloc((size_t)d->n_attrs + 1, sizeof *set->values);
    if (!set->values)
        return oom(b->err);
    for (int i = 0; i < d->n_attrs; i++) {
        const char *name = d->attrs[i].name;
        slim__attr_value *v = &set->values[i];
        v->type = d->attrs[i].type;
        v->n = 1;
        if (!strcmp(name, "strides") || !strcmp(name, "padding"))
            *v = *slim__attrs_get(&dw->attrs, name);
        else if (!strcmp(name, "expand"))
            v->ints = &cv->expand;
        else if (!strcmp(name, "residual"))
            v->ints = &cv->residual;
        else if (!strcmp(name, "expand_epsilon"))
            v->floats = &cv->eps[0];
        else if (!strcmp(name, "depthwise_epsilon"))
            v->floats = &cv->eps[1];
        else if (!strcmp(name, "batch_norm_epsilon"))
            v->floats = &cv->eps[2];
        else if (!strcmp(name, "expand_activation"))
            v->str = (char *)act_names[a >= 0 ? b->fuse_act[a] : ACT_NONE];
        else if (!strcmp(name, "depthwise_activation"))
            v->str = (char *)act_names[b->fuse_act[dn]];
        else if (!strcmp(name, "activation"))
            v->str = (char *)act_names[b->fuse_act[n]];
        else
            return slim__error(b->err, SLIM_EINTERNAL, "conv2d_chain: unknown attribute %s", name);
    }
    return SLIM_OK;
}

/* The chain's step name: its layers' names joined by " + " (profiles count
 * each one's multiply-adds), kept by the program. */
static const char *chain_name(build *b, int n)
{
    const int convs[3] = {b->chain_a[n], b->chain_d[n], n};
    size_t len = 1;
    for (int k = 0; k < 3; k++)
        len += convs[k] >= 0 ? strlen(b->g->nodes[convs[k]].name) + 3 : 0;
    char *s = malloc(len),
         **owned = realloc(b->p->owned, (size_t)(b->p->n_owned + 1) * sizeof *owned);
    if (!s || !owned) {
        free(s);
        if (owned)
            b->p->owned = owned;
        return NULL;
    }
    b->p->owned = owned;
    owned[b->p->n_owned++] = s;
    s[0] = 0;
    for (int k = 0; k < 3; k++)
        if (convs[k] >= 0) {
            if (s[0])
                strcat(s, " + ");
            strcat(s, b->g->nodes[convs[k]].name);
        }
    return s;
}

static slim_status compile(build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    const slim_compile_opts *o = b->o;
    slim_error *err = b->err;
    int nt = g->n_tensors, nn = g->n_nodes;

    /* 1. prune: what the loss and the marked outputs need */
    bool any_marked = false;
    for (int t = 0; t < nt; t++)
        any_marked |= g->tensors[t].marked;
    bool *tneed = calloc((size_t)nt + 1, sizeof *tneed);
    if (!tneed)
        return oom(err);
    for (int t = 0; t < nt; t++)
        tneed[t] = g->tensors[t].marked || !any_marked;
    for (int n = nn - 1; n >= 0; n--) {
        const slim__node *nd = &g->nodes[n];
        for (int j = 0; j < nd->n_out; j++)
            b->needed[n] |= tneed[nd->out[j]];
        if (b->needed[n])
            for (int i = 0; i < nd->n_in; i++)
                tneed[nd->in[i]] = true;
    }
    free(tneed);

    /* 3. which tensors need gradients */
    /* training without a loss runs forward in training mode only (batch
     * statistics, dropout): useful for statistics passes and conformance */
    bool backward = p->training && g->loss >= 0;
    if (p->training && g->loss < 0 && o->optimizer)
        return slim__error(err, SLIM_ESTATE,
                           "training with an optimizer needs a loss "
                           "(slim_graph_set_loss)");
    for (int i = 0; backward && i < g->n_params; i++) {
        const slim__param *pa = &g->params[i];
        b->req[pa->t] =
            (pa->flags & SLIM_PARAM_TRAINABLE) && in_scopes(pa->name, o->trainable_scopes);
    }

    /* inference: conv2d + batch_norm + add + relu as one step */
    if (!p->training && !o->no_fusion) {
        slim_status st = find_fusions(b);
        if (st == SLIM_OK)
            st = find_chains(b);
        if (st != SLIM_OK)
            return st;
    }

    /* 2. re-infer for this mode and thread count */
    for (int n = 0; n < nn; n++) {
        if (!b->needed[n])
            continue;
        const slim__node *nd = &g->nodes[n];
        slim_tid tin[SLIM_MAX_INPUTS];
        slim_tensor_desc in[SLIM_MAX_INPUTS];
        int n_in = node_inputs(b, n, tin);
        for (int i = 0; i < n_in; i++)
            in[i] = g->tensors[tin[i]].d;
        if (b->chain_d[n] >= 0) {
            slim__attr_set set;
            chain_vals cv;
            slim_status st = chain_attrs(b, n, &set, &cv);
            if (st == SLIM_OK)
                st = slim__node_infer(b->chain_op, &set, in, n_in, false, p->nth, nd->name,
                                      &p->infer[n], err);
            free(set.values);
            if (st != SLIM_OK)
                return st;
            b->node_training[n] = false;
            continue;
        }
        if (b->fuse_out[n] >= 0) {
            slim__attr_set set;
            int64_t flag[2];
            double eps;
            slim_status st = fused_attrs(b, n, &set, flag, &eps);
            if (st != SLIM_OK)
                return st;
            b->node_training[n] = false;
            st =
                slim__node_infer(nd->d, &set, in, n_in, false, p->nth, nd->name, &p->infer[n], err);
            free(set.values);
            if (st != SLIM_OK)
                return st;
            continue;
        }
        /* A node that writes state (batch-norm statistics) while none of its
         * trainable inputs is trained here is frozen: it runs as in inference
         * (moving statistics, no state updates), as fine-tuning with
         * trainable_scopes expects (unless train_frozen_batch_norm: TF-Slim's
         * batch statistics and moving-average updates there too). */
        bool node_training = p->training;
        if (node_training && backward && nd->d->mutates_inputs && !o->train_frozen_batch_norm) {
            bool any_param = false, any_trained = false;
            for (int i = 0; i < nd->n_in; i++) {
                const slim__tinfo *ti = &g->tensors[nd->in[i]];
                if (ti->kind != SLIM__T_PARAM || ((nd->d->mutates_inputs >> i) & 1u))
                    continue;
                any_param = true;
                any_trained |= b->req[nd->in[i]];
            }
            node_training = !any_param || any_trained;
        }
        b->node_training[n] = node_training;
        slim_status st = slim__node_infer(nd->d, &nd->attrs, in, nd->n_in, node_training, p->nth,
                                          nd->name, &p->infer[n], err);
        if (st != SLIM_OK)
            return st;
        for (int j = 0; j < nd->n_out; j++) {
            const slim_tensor_desc *a = &p->infer[n].out[j], *e = &g->tensors[nd->out[j]].d;
            if (a->dtype != e->dtype || a->shape.rank != e->shape.rank ||
                memcmp(a->shape.dim, e->shape.dim, (size_t)a->shape.rank * sizeof(int64_t)))
                return slim__error(err, SLIM_EINTERNAL,
                                   "node '%s' (%s): output %d changes shape between training and "
                                   "inference (an op bug)",
                                   nd->name, nd->d->name, j);
        }
    }

    for (int n = 0; backward && n < nn; n++) {
        const slim__node *nd = &g->nodes[n];
        if (!b->needed[n] || !nd->d->backward)
            continue;
        bool r = false;
        for (int i = 0; i < nd->n_in; i++)
            r |= b->req[nd->in[i]] && !((nd->d->nondiff_inputs >> i) & 1u);
        for (int j = 0; j < nd->n_out; j++)
            b->req[nd->out[j]] = r && g->tensors[nd->out[j]].d.dtype == SLIM_F32;
    }
    if (backward && !b->req[g->loss])
        return slim__error(err, SLIM_ESTATE,
                           "the loss '%s' does not depend on any trainable "
                           "parameter%s",
                           g->tensors[g->loss].name,
                           o->trainable_scopes ? " within the trainable scopes" : "");
    if (backward) {
        b->live[g->loss] = true;
        for (int n = nn - 1; n >= 0; n--) {
            const slim__node *nd = &g->nodes[n];
            if (!b->needed[n] || !nd->d->backward)
                continue;
            bool any = false;
            for (int j = 0; j < nd->n_out; j++)
                any |= b->live[nd->out[j]];
            if (!any)
                continue;
            bool gives = false;
            for (int i = 0; i < nd->n_in; i++)
                if (b->req[nd->in[i]] && !((nd->d->nondiff_inputs >> i) & 1u)) {
                    b->live[nd->in[i]] = true;
                    b->contrib[nd->in[i]]++;
                    gives = true;
                }
            b->bwd[n] = gives;
        }
    }

    /* optimizer slots: inputs beyond (param, grad) of the update op, with the
     * initial values its descriptor declares */
    float slot_init[SLIM_MAX_INPUTS];
    if (backward && b->opt) {
        slim_status st = update_op_slots(b, slot_init);
        if (st != SLIM_OK)
            return st;
        if (p->n_slots > 0) {
            p->slots = calloc((size_t)g->n_params * (size_t)p->n_slots, sizeof *p->slots);
            if (!p->slots)
                return oom(err);
            for (int i = 0; i < g->n_params; i++) {
                if (!b->req[g->params[i].t])
                    continue;
                size_t bytes = desc_bytes(&g->tensors[g->params[i].t].d);
                size_t al = (bytes + ALIGN - 1) & ~(size_t)(ALIGN - 1);
                for (int k = 0; k < p->n_slots; k++) {
                    if (b->plan_only) {
                        p->slot_bytes += bytes;
                        continue;
                    }
                    float *s = aligned_alloc(ALIGN, al + SLIM__BLIS_SLACK);
                    if (!s)
                        return oom(err);
                    for (size_t e = 0; e < bytes / sizeof(float); e++)
                        s[e] = slot_init[k];
                    p->slots[i * p->n_slots + k] = s;
                    p->slot_bytes += bytes;
                }
            }
        }
    }

    /* arena buffers for values and gradients */
    for (int t = 0; t < nt; t++) {
        const slim__tinfo *ti = &g->tensors[t];
        bool used =
            ti->kind == SLIM__T_INPUT || (ti->kind == SLIM__T_NODE && b->needed[ti->producer]);
        used = (used && !b->gone[t]) || b->fused[t];
        if (used) {
            p->tbuf[t] = new_buf(p, desc_bytes(&ti->d));
            if (p->tbuf[t] < 0)
                return oom(err);
        }
        if (b->live[t]) {
            p->gbuf[t] = new_buf(p, (size_t)slim_shape_numel(&ti->d.shape) * sizeof(float));
            if (p->gbuf[t] < 0)
                return oom(err);
        }
    }

    /* forward steps */
    for (int n = 0; n < nn; n++) {
        if (!b->needed[n])
            continue;
        const slim__node *nd = &g->nodes[n];
        const slim__infer_result *r = &p->infer[n];
        slim__step *s = new_step(p, SLIM__STEP_FWD, n);
        if (!s)
            return oom(err);
        slim_tid in[SLIM_MAX_INPUTS];
        int n_in = node_inputs(b, n, in);
        const bool chain = b->chain_d[n] >= 0;
        s->d = chain ? b->chain_op : nd->d;
        s->params = r->params;
        s->training = b->node_training[n];
        s->n_in = n_in;
        s->n_out = nd->n_out;
        s->n_saved = r->n_saved;
        s->node_id = (uint32_t)n;
        s->name = chain ? chain_name(b, n) : nd->name;
        if (!s->name)
            return oom(err);
        s->op = chain ? b->chain_op->name : b->fuse_out[n] >= 0 ? fused_name(b, n) : nd->d->name;
        int vi = new_views(p, n_in), vo = new_views(p, nd->n_out), vs = new_views(p, r->n_saved);
        if (vi < -1 || vo < -1 || vs < -1)
            return oom(err);
        s = &p->steps[p->n_steps - 1];
        s->v_in = vi;
        s->v_out = vo;
        s->v_saved = vs;
        for (int i = 0; i < n_in; i++)
            bind_value(b, vi + i, in[i]);
        for (int j = 0; j < nd->n_out; j++)
            bind_value(b, vo + j, b->fuse_out[n] >= 0 ? b->fuse_out[n] : nd->out[j]);
        for (int k = 0; k < r->n_saved; k++) {
            int sb = new_buf(p, desc_bytes(&r->saved[k]));
            if (sb < 0)
                return oom(err);
            set_view(p, vs + k, r->saved[k], sb, NULL);
        }
        if (r->ws_bytes) {
            s->ws_buf = new_buf(p, r->ws_bytes);
            if (s->ws_buf < 0)
                return oom(err);
            s->ws_size = r->ws_bytes;
        }
        bool is_ref;
        s->fn = slim__pick_kernel(s->d, false, false, &is_ref);
        s->single = is_ref;
        p->n_fwd++;
    }
    int *fwd_step = calloc((size_t)nn + 1, sizeof *fwd_step);
    if (!fwd_step)
        return oom(err);
    for (int s = 0; s < p->n_steps; s++)
        fwd_step[p->steps[s].node] = s;

    /* backward */
    if (backward) {
        slim__step *s = new_step(p, SLIM__STEP_SEED, -1);
        if (!s) {
            free(fwd_step);
            return oom(err);
        }
        s->fn = k_seed;
        s->single = true;
        s->name = "loss gradient";
        s->n_out = 1;
        int vo = new_views(p, 1);
        if (vo < 0) {
            free(fwd_step);
            return oom(err);
        }
        p->steps[p->n_steps - 1].v_out = vo;
        set_view(p, vo, (slim_tensor_desc){SLIM_F32, g->tensors[g->loss].d.shape}, p->gbuf[g->loss],
                 NULL);
    }
    slim_status st = SLIM_OK;
    for (int n = nn - 1; backward && n >= 0 && st == SLIM_OK; n--) {
        if (!b->bwd[n])
            continue;
        const slim__node *nd = &g->nodes[n];
        const slim__step *f = &p->steps[fwd_step[n]];
        slim__step *s = new_step(p, SLIM__STEP_BWD, n);
        if (!s) {
            st = oom(err);
            break;
        }
        int vd = new_views(p, nd->n_out), vg = new_views(p, nd->n_in);
        if (vd < 0 || vg < -1) {
            st = oom(err);
            break;
        }
        s = &p->steps[p->n_steps - 1];
        f = &p->steps[fwd_step[n]];
        /* share the forward step's views of inputs, outputs, saved buffers */
        s->d = nd->d;
        s->params = f->params;
        s->training = f->training;
        s->n_in = f->n_in;
        s->n_out = f->n_out;
        s->n_saved = f->n_saved;
        s->v_in = f->v_in;
        s->v_out = f->v_out;
        s->v_saved = f->v_saved;
        /* its own scratch, live for this step only (the forward's would
         * live from forward to backward: every conv's packed filters at
         * once at the peak) */
        s->ws_buf = -1;
        s->ws_size = f->ws_size;
        if (f->ws_size) {
            int wb = new_buf(p, f->ws_size);
            if (wb < 0) {
                st = oom(err);
                break;
            }
            s = &p->steps[p->n_steps - 1];
            s->ws_buf = wb;
        }
        s->reads_in = p->infer[n].bwd_in;
        s->reads_out = p->infer[n].bwd_out;
        s->node_id = f->node_id;
        s->name = nd->name;
        s->v_dout = vd;
        s->v_din = vg;
        for (int j = 0; j < nd->n_out; j++) {
            slim_tid t = nd->out[j];
            set_view(p, vd + j, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape},
                     b->live[t] ? p->gbuf[t] : -1, NULL);
        }
        bool is_ref;
        s->fn = slim__pick_kernel(nd->d, true, false, &is_ref);
        s->single = is_ref;
        p->n_bwd++;
        int bstep = p->n_steps - 1;
        /* gradient targets: the first contribution in place, the others partial */
        int acc_from[SLIM_MAX_INPUTS], acc_to[SLIM_MAX_INPUTS], n_acc = 0;
        for (int i = 0; i < nd->n_in; i++) {
            slim_tid t = nd->in[i];
            slim_tensor_desc gd = {SLIM_F32, g->tensors[t].d.shape};
            if (!b->req[t] || ((nd->d->nondiff_inputs >> i) & 1u)) {
                set_view(p, vg + i, gd, -1, NULL);
                continue;
            }
            if (b->seen[t]++ == 0) {
                set_view(p, vg + i, gd, p->gbuf[t], NULL);
            } else {
                int tb = new_buf(p, desc_bytes(&gd));
                if (tb < 0) {
                    st = oom(err);
                    break;
                }
                set_view(p, vg + i, gd, tb, NULL);
                acc_from[n_acc] = tb;
                acc_to[n_acc++] = t;
            }
        }
        (void)bstep;
        for (int a = 0; a < n_acc && st == SLIM_OK; a++) {
            slim__step *as = new_step(p, SLIM__STEP_ACC, n);
            int v = new_views(p, 2);
            if (!as || v < 0) {
                st = oom(err);
                break;
            }
            as = &p->steps[p->n_steps - 1];
            as->fn = k_acc;
            as->name = nd->name;
            as->n_in = 1;
            as->n_out = 1;
            as->v_in = v;
            as->v_out = v + 1;
            slim_tensor_desc gd = {SLIM_F32, g->tensors[acc_to[a]].d.shape};
            set_view(p, v, gd, acc_from[a], NULL);
            set_view(p, v + 1, gd, p->gbuf[acc_to[a]], NULL);
        }
        /* parameters whose gradient is now final: update right away */
        for (int i = 0; i < nd->n_in && st == SLIM_OK; i++) {
            slim_tid t = nd->in[i];
            const slim__tinfo *ti = &g->tensors[t];
            if (ti->kind != SLIM__T_PARAM || !b->req[t] || b->seen[t] != b->contrib[t])
                continue;
            b->seen[t]++; /* once, even if the node uses it twice */
            if (p->has_coll && b->opt)
                st = add_coll_step(b, ti->producer, true);
            if (b->opt && (o->clip_gradient_norm > 0 || p->has_coll))
                b->deferred[b->n_deferred++] = ti->producer;
            else if (b->opt)
                st = add_update(b, ti->producer);
        }
    }
    free(fwd_step);
    if (st == SLIM_OK && b->opt)
        st = add_deferred_updates(b);
    if (st != SLIM_OK)
        return st;
    return plan(p, !b->plan_only, err);
}

/* ---- memory plan ----------------------------------------------------------- */

static void touch(slim_program *p, int buf, int step)
{
    if (buf < 0)
        return;
    slim__buffer *b = &p->bufs[buf];
    if (step < b->first)
        b->first = step;
    if (step > b->last)
        b->last = step;
}

static void touch_block(slim_program *p, int v, int n, int step, uint32_t which)
{
    for (int i = 0; v >= 0 && i < n; i++)
        if (i >= 32 || ((which >> i) & 1u))
            touch(p, p->view_buf[v + i], step);
}

static int by_size_desc(const void *a, const void *b, void *ctx)
{
    const slim__buffer *bufs = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (bufs[x].bytes != bufs[y].bytes)
        return bufs[x].bytes < bufs[y].bytes ? 1 : -1;
    return x - y;
}

static int by_offset(const void *a, const void *b, void *ctx)
{
    const slim__buffer *bufs = ctx;
    int x = *(const int *)a, y = *(const int *)b;
    if (bufs[x].offset != bufs[y].offset)
        return bufs[x].offset < bufs[y].offset ? -1 : 1;
    return x - y;
}

/* How many of step st's views (inputs, outputs, saved, output gradients,
 * input gradients) are arena buffer buf. */
static int step_views_of(const slim_program *p, const slim__step *st, int buf)
{
    const int first[5] = {st->v_in, st->v_out, st->v_saved, st->v_dout, st->v_din};
    const int count[5] = {st->n_in, st->n_out, st->n_saved, st->n_out, st->n_in};
    int n = 0;
    for (int k = 0; k < 5; k++)
        for (int i = 0; first[k] >= 0 && i < count[k]; i++)
            n += p->view_buf[first[k] + i] == buf;
    return n;
}

/* Buffer bo (written first by step s) becomes buffer bi (read last by step
 * s) when the sizes match and step s has no other view of either. */
static bool merge_in_place(slim_program *p, const slim__step *st, int s, int bi, int bo)
{
    if (bi < 0 || bo < 0 || bi == bo)
        return false;
    slim__buffer *in = &p->bufs[bi], *out = &p->bufs[bo];
    if (in->last != s || out->first != s || in->bytes != out->bytes ||
        step_views_of(p, st, bi) != 1 || step_views_of(p, st, bo) != 1)
        return false;
    for (int v = 0; v < p->n_views; v++)
        if (p->view_buf[v] == bo)
            p->view_buf[v] = bi;
    for (int t = 0; t < p->g->n_tensors; t++) {
        if (p->tbuf[t] == bo)
            p->tbuf[t] = bi;
        if (p->gbuf[t] == bo)
            p->gbuf[t] = bi;
    }
    in->last = out->last;
    out->bytes = 0;
    out->first = 0, out->last = -1;
    return true;
}

/* Outputs written in the memory of an input, and input gradients in that of
 * an output gradient (set_in_place, set_backward_in_place): the first
 * candidate whose buffer the step reads last. ResNet-50's fused conv3 + add
 * layers in inference then store into the residual's lines they have just
 * read, instead of fetching each output line first; in training the adds
 * write over a branch and batch norm's dx over dy. */
static void share_in_place(slim_program *p)
{
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *st = &p->steps[s];
        if (st->node < 0 || (st->kind != SLIM__STEP_FWD && st->kind != SLIM__STEP_BWD))
            continue;
        const slim__infer_result *r = &p->infer[st->node];
        const bool fwd = st->kind == SLIM__STEP_FWD;
        /* forward: output o over input i; backward: input i's gradient over output o's */
        const int v_over = fwd ? st->v_out : st->v_din, v_under = fwd ? st->v_in : st->v_dout;
        const int n_over = fwd ? st->n_out : st->n_in, n_under = fwd ? st->n_in : st->n_out;
        if (v_over < 0 || v_under < 0)
            continue;
        for (int a = 0; a < n_over; a++) {
            const uint32_t cand = fwd ? r->in_place[a] : r->bwd_in_place[a];
            for (int b = 0; b < n_under && b < 32; b++)
                if (((cand >> b) & 1u) &&
                    merge_in_place(p, st, s, p->view_buf[v_under + b], p->view_buf[v_over + a]))
                    break;
        }
    }
}

static slim_status plan(slim_program *p, bool allocate, slim_error *err)
{
    slim_graph *g = p->g;
    int last = p->n_steps; /* "after the run": readable by the caller */
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *st = &p->steps[s];
        /* a backward step shares its forward step's views of the inputs and
           outputs, but keeps alive only those its kernel reads */
        bool bwd = st->kind == SLIM__STEP_BWD;
        touch_block(p, st->v_in, st->n_in, s, bwd ? st->reads_in : ~0u);
        touch_block(p, st->v_out, st->n_out, s, bwd ? st->reads_out : ~0u);
        touch_block(p, st->v_saved, st->n_saved, s, ~0u);
        touch_block(p, st->v_dout, st->n_out, s, ~0u);
        touch_block(p, st->v_din, st->n_in, s, ~0u);
        touch(p, st->ws_buf, s);
        if (st->fn == k_global_norm) /* the norm stays readable after the run */
            touch(p, p->view_buf[st->v_out + 1], last);
    }
    for (int t = 0; t < g->n_tensors; t++) {
        const slim__tinfo *ti = &g->tensors[t];
        /* inputs are written by the caller before the run and stay intact through it,
         * so a program can be run again on the same inputs */
        if (p->tbuf[t] >= 0 && ti->kind == SLIM__T_INPUT)
            touch(p, p->tbuf[t], -1), touch(p, p->tbuf[t], last);
        if (p->tbuf[t] >= 0 && ti->marked)
            touch(p, p->tbuf[t], last);
        if (p->gbuf[t] >= 0 && ti->kind == SLIM__T_PARAM)
            touch(p, p->gbuf[t], last);
    }
    int n = p->n_bufs;
    p->naive_bytes = 0; /* every buffer apart, before any is shared */
    for (int k = 0; k < n; k++)
        p->naive_bytes += p->bufs[k].bytes;
    share_in_place(p);
    int *order = malloc((size_t)(n ? n : 1) * sizeof *order);
    int *placed = malloc((size_t)(n ? n : 1) * sizeof *placed);
    if (!order || !placed) {
        free(order);
        free(placed);
        return oom(err);
    }
    for (int i = 0; i < n; i++)
        order[i] = i;
    qsort_r(order, (size_t)n, sizeof *order, by_size_desc, p->bufs);
    int n_placed = 0;
    size_t total = 0;
    int *overl = malloc((size_t)(n ? n : 1) * sizeof *overl);
    if (!overl) {
        free(order);
        free(placed);
        return oom(err);
    }
    for (int k = 0; k < n; k++) {
        slim__buffer *b = &p->bufs[order[k]];
        if (b->last < b->first) { /* never used: give it a lifetime of its own */
            b->first = b->last = -2;
        }
        int m = 0;
        for (int j = 0; j < n_placed; j++) {
            const slim__buffer *o = &p->bufs[placed[j]];
            if (o->first <= b->last && b->first <= o->last)
                overl[m++] = placed[j];
        }
        qsort_r(overl, (size_t)m, sizeof *overl, by_offset, p->bufs);
        size_t off = 0;
        for (int j = 0; j < m; j++) {
            const slim__buffer *o = &p->bufs[overl[j]];
            if (o->offset >= off + b->bytes)
                break;
            if (o->offset + o->bytes > off)
                off = o->offset + o->bytes;
        }
        b->offset = off;
        if (off + b->bytes > total)
            total = off + b->bytes;
        placed[n_placed++] = order[k];
    }
    free(overl);
    free(order);
    free(placed);
    p->arena_bytes = total;
    if (!allocate)
        return SLIM_OK;
    p->arena = aligned_alloc(ALIGN, total + SLIM__BLIS_SLACK);
    if (!p->arena)
        return slim__error(err, SLIM_ENOMEM, "cannot allocate the %zu-byte arena", total);
    memset(p->arena, 0, total + SLIM__BLIS_SLACK);
    for (int v = 0; v < p->n_views; v++)
        if (p->view_buf[v] >= 0)
            p->views[v].data = p->arena + p->bufs[p->view_buf[v]].offset;
    for (int s = 0; s < p->n_steps; s++) {
        slim__step *st = &p->steps[s];
        st->in = st->v_in >= 0 ? &p->views[st->v_in] : NULL;
        st->out = st->v_out >= 0 ? &p->views[st->v_out] : NULL;
        st->saved = st->v_saved >= 0 ? &p->views[st->v_saved] : NULL;
        st->dout = st->v_dout >= 0 ? &p->views[st->v_dout] : NULL;
        st->din = st->v_din >= 0 ? &p->views[st->v_din] : NULL;
        st->ws = st->ws_buf >= 0 ? p->arena + p->bufs[st->ws_buf].offset : NULL;
    }
    return SLIM_OK;
}

/* ---- entry point ------------------------------------------------------------ */

void slim__program_destroy(slim_program *p);

static slim_status compile_program(slim_graph *g, const slim_compile_opts *opts, bool plan_only,
                                   slim_program **out, slim_error *err)
{
    *out = NULL;
    if (!g)
        return slim__error(err, SLIM_EINVAL, "no graph");
    slim_compile_opts o = opts ? *opts : (slim_compile_opts){0};
    if (o.num_threads < 0 || o.num_threads > 256)
        return slim__error(err, SLIM_EINVAL, "num_threads %d is out of range [1, 256]",
                           o.num_threads);
    if (!plan_only && !g->params_ready) {
        slim_status st = slim_graph_init_params(g, 0, err);
        if (st != SLIM_OK)
            return st;
    }
    slim_program *p = calloc(1, sizeof *p);
    if (!p)
        return oom(err);
    p->g = g;
    p->training = o.training;
    p->nth = o.num_threads ? o.num_threads : 1;
    if (o.collective && o.training) {
        p->coll = *o.collective;
        p->has_coll = p->coll.grad_ready && p->coll.grad_wait;
    }
    int nt = g->n_tensors, nn = g->n_nodes;
    build b = {.p = p, .g = g, .o = &o, .plan_only = plan_only, .err = err};
    b.needed = calloc((size_t)nn + 1, sizeof(bool));
    b.bwd = calloc((size_t)nn + 1, sizeof(bool));
    b.node_training = calloc((size_t)nn + 1, sizeof(bool));
    b.req = calloc((size_t)nt + 1, sizeof(bool));
    b.live = calloc((size_t)nt + 1, sizeof(bool));
    b.contrib = calloc((size_t)nt + 1, sizeof(int));
    b.seen = calloc((size_t)nt + 1, sizeof(int));
    b.deferred = calloc((size_t)g->n_params + 1, sizeof(int));
    b.fuse_out = malloc(((size_t)nn + 1) * sizeof(int));
    b.fuse_bn = malloc(((size_t)nn + 1) * sizeof(int));
    b.fuse_act = calloc((size_t)nn + 1, sizeof(int));
    b.fuse_res = malloc(((size_t)nn + 1) * sizeof(int));
    b.gone = calloc((size_t)nt + 1, sizeof(bool));
    b.fused = calloc((size_t)nt + 1, sizeof(bool));
    b.chain_d = malloc(((size_t)nn + 1) * sizeof(int));
    b.chain_a = malloc(((size_t)nn + 1) * sizeof(int));
    p->tbuf = malloc(((size_t)nt + 1) * sizeof(int));
    p->gbuf = malloc(((size_t)nt + 1) * sizeof(int));
    p->n_infer = nn + g->n_params + 1; /* nodes, updates, the global norm */
    p->infer = calloc((size_t)p->n_infer + 1, sizeof *p->infer);
    slim_status st = SLIM_OK;
    if (!b.needed || !b.bwd || !b.node_training || !b.req || !b.live || !b.contrib || !b.seen ||
        !b.deferred || !p->tbuf || !p->gbuf || !p->infer || !b.fuse_out || !b.fuse_bn ||
        !b.fuse_act || !b.fuse_res || !b.gone || !b.fused || !b.chain_d || !b.chain_a)
        st = oom(err);
    for (int n = 0; st == SLIM_OK && n < nn; n++)
        b.fuse_out[n] = b.fuse_bn[n] = b.fuse_res[n] = b.chain_d[n] = b.chain_a[n] = -1;
    for (int t = 0; st == SLIM_OK && t < nt; t++)
        p->tbuf[t] = p->gbuf[t] = -1;
    if (st == SLIM_OK && o.training && o.optimizer) {
        b.opt = slim_registry_find(g->reg, o.optimizer);
        if (!b.opt)
            st = slim__error(err, SLIM_ENOTFOUND, "unknown optimizer op '%s'", o.optimizer);
        else
            st = slim__attrs_resolve(b.opt, o.optimizer_attrs, &b.opt_attrs, err);
    }
    if (st == SLIM_OK)
        st = compile(&b);
    if (st == SLIM_OK && !plan_only && slim__pool_new(p->nth, &p->pool) != SLIM_OK)
        st = slim__error(err, SLIM_ENOMEM, "cannot start %d threads", p->nth);
    if (st == SLIM_OK) {
        p->times = calloc((size_t)p->n_steps + 1, sizeof *p->times);
        if (!p->times)
            st = oom(err);
    }
    for (int s = 0; st == SLIM_OK && s < p->n_steps; s++) {
        const slim__step *sp = &p->steps[s];
        p->times[s].name = sp->name;
        p->times[s].op = sp->op                          ? sp->op
                         : sp->d                         ? sp->d->name
                         : sp->kind == SLIM__STEP_ACC    ? "gradient_sum"
                         : sp->kind == SLIM__STEP_UPDATE ? "global_norm"
                                                         : "seed";
        p->times[s].phase = sp->kind == SLIM__STEP_SEED ? 1 : (int)sp->kind;
    }
    if (b.opt)
        slim__attrs_fini(&b.opt_attrs);
    free(b.needed);
    free(b.bwd);
    free(b.node_training);
    free(b.req);
    free(b.live);
    free(b.contrib);
    free(b.seen);
    free(b.deferred);
    free(b.fuse_out);
    free(b.fuse_bn);
    free(b.fuse_act);
    free(b.fuse_res);
    free(b.gone);
    free(b.fused);
    free(b.chain_d);
    free(b.chain_a);
    if (st != SLIM_OK) {
        slim__program_destroy(p);
        return st;
    }
    *out = p;
    return SLIM_OK;
}

slim_status slim_graph_compile(slim_graph *g, const slim_compile_opts *opts, slim_program **out,
                               slim_error *err)
{
    return compile_program(g, opts, false, out, err);
}

slim_status slim_graph_plan(slim_graph *g, const slim_compile_opts *opts, slim_program_stats *st,
                            slim_error *err)
{
    slim_program *p;
    if (st)
        memset(st, 0, sizeof *st);
    slim_status s = compile_program(g, opts, true, &p, err);
    if (s != SLIM_OK)
        return s;
    if (st)
        slim_program_get_stats(p, st);
    slim__program_destroy(p);
    return SLIM_OK;
}

slim_status slim_program_global_norm(const slim_program *p, float *norm, slim_error *err)
{
    for (int s = 0; p && p->arena && s < p->n_steps; s++)
        if (p->steps[s].fn == k_global_norm) {
            *norm = *(const float *)p->steps[s].out[1].data;
            return SLIM_OK;
        }
    return slim__error(err, SLIM_ENOTFOUND,
                       "the program has no global gradient norm (compiled without "
                       "clip_gradient_norm)");
}
