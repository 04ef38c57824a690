/* engine/update.c - the optimizer's part of a training program: its slots
 * (per-parameter state, allocated here with their initial values) and an
 * update step per trained parameter, placed right after its gradient is
 * final (slim__gradient_final: the one place that knows). Across processes
 * (slim_compile_opts.collective) a step there hands the gradient to its
 * allreduce, and each update waits until after backward behind a step that
 * copies the averaged gradient back. With global-norm clipping the updates
 * wait too: after backward, one step computes the norm of every gradient
 * and the scale each update takes as its last input. */
#include "engine/compile.h"
#include "core/error.h"
#include "core/gemm.h"

#include <stdlib.h>

/* Check that b->opt is an update op (param, grad, its slots, maybe a gradient
 * scale), set p->n_slots and each slot's initial value (its descriptor's
 * constant, or the attribute it names). */
static slim_status update_op_slots(slim__build *b, float *slot_init)
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

/* The optimizer's slots of every trained parameter, filled with their
 * initial values (only counted for slim_graph_plan). */
slim_status slim__slots(slim__build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    float slot_init[SLIM_MAX_INPUTS];
    if (!b->backward || !b->opt)
        return SLIM_OK;
    slim_status st = update_op_slots(b, slot_init);
    if (st != SLIM_OK || p->n_slots == 0)
        return st;
    p->slots = calloc((size_t)g->n_params * (size_t)p->n_slots, sizeof *p->slots);
    if (!p->slots)
        return slim__oom(b->err);
    for (int i = 0; i < g->n_params; i++) {
        if (!b->req[g->params[i].t])
            continue;
        size_t bytes = slim__desc_bytes(&g->tensors[g->params[i].t].d);
        size_t al = (bytes + SLIM__ALIGN - 1) & ~(size_t)(SLIM__ALIGN - 1);
        for (int k = 0; k < p->n_slots; k++) {
            if (b->plan_only) {
                p->slot_bytes += bytes;
                continue;
            }
            float *s = aligned_alloc(SLIM__ALIGN, al + SLIM__BLIS_SLACK);
            if (!s)
                return slim__oom(b->err);
            for (size_t e = 0; e < bytes / sizeof(float); e++)
                s[e] = slot_init[k];
            p->slots[i * p->n_slots + k] = s;
            p->slot_bytes += bytes;
        }
    }
    return SLIM_OK;
}

static slim_status add_update(slim__build *b, int param)
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
    slim__step *s = slim__new_step(p, SLIM__STEP_UPDATE, -1);
    if (!s)
        return slim__oom(b->err);
    s->param = param;
    s->training = true;
    s->d = b->opt;
    s->params = r->params;
    s->n_in = n_in;
    s->n_out = r->n_out;
    s->lr_mult = pa->lr_mult;
    s->node_id = (uint32_t)(g->n_nodes + param);
    s->name = pa->name;
    int vi = slim__new_views(p, n_in), vo = slim__new_views(p, r->n_out);
    if (vi < 0 || vo < 0)
        return slim__oom(b->err);
    s = &p->steps[p->n_steps - 1];
    s->v_in = vi;
    s->v_out = vo;
    slim__set_view(p, vi, pd, -1, pa->data);
    slim__set_view(p, vi + 1, pd, p->gbuf[pa->t], NULL);
    for (int k = 0; k < p->n_slots; k++)
        slim__set_view(p, vi + 2 + k, pd, -1, p->slots ? p->slots[param * p->n_slots + k] : NULL);
    if (clip)
        slim__set_view(p, vi + n_in - 1, in[n_in - 1], p->view_buf[b->scale_view], NULL);
    for (int j = 0; j < r->n_out; j++) {
        int ob = slim__new_buf(p, slim__desc_bytes(&r->out[j]));
        if (ob < 0)
            return slim__oom(b->err);
        slim__set_view(p, vo + j, r->out[j], ob, NULL);
    }
    if (r->ws_bytes) {
        s->ws_buf = slim__new_buf(p, r->ws_bytes);
        s->ws_size = r->ws_bytes;
        if (s->ws_buf < 0)
            return slim__oom(b->err);
    }
    bool is_ref;
    s->fn = slim__pick_kernel(b->opt, false, false, &is_ref);
    s->single = is_ref;
    p->n_upd++;
    return SLIM_OK;
}

/* Training across processes: a step right after the one that completes a
 * trained parameter's gradient hands it to grad_ready (the allreduce of its
 * bucket can start while backward goes on), and a step before its update
 * copies the averaged gradient back (grad_wait returns once its bucket is
 * done). node_id carries the parameter index. */
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

static slim_status add_coll_step(slim__build *b, int param, bool ready)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    slim_tid t = g->params[param].t;
    slim__step *s = slim__new_step(p, ready ? SLIM__STEP_BWD : SLIM__STEP_UPDATE, -1);
    int v = slim__new_views(p, 1);
    if (!s || v < 0)
        return slim__oom(b->err);
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
    slim__set_view(p, v, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape}, p->gbuf[t], NULL);
    return SLIM_OK;
}

slim_status slim__gradient_final(slim__build *b, int param)
{
    slim_status st = SLIM_OK;
    if (b->p->has_coll && b->opt)
        st = add_coll_step(b, param, true);
    if (b->opt && (b->o->clip_gradient_norm > 0 || b->p->has_coll))
        b->deferred[b->n_deferred++] = param;
    else if (b->opt)
        st = add_update(b, param);
    return st;
}

/* The updates deferred to after backward: across processes, each after the
 * wait for its averaged gradient; with global-norm clipping, the norm step
 * over every gradient (after all the waits) and then the updates, each
 * taking its scale. */
slim_status slim__deferred_updates(slim__build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    if (!b->opt || b->n_deferred == 0)
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
    const slim_op_desc *d = slim__role_op(SLIM__ROLE_GLOBAL_NORM);
    slim_attrs *a = slim_attrs_new();
    slim_tensor_desc *in = malloc((size_t)b->n_deferred * sizeof *in);
    slim__attr_set set = {0};
    slim_status st =
        a && in ? slim_attrs_set_float(a, "clip_norm", b->o->clip_gradient_norm) : SLIM_ENOMEM;
    if (st == SLIM_OK)
        st = slim__attrs_resolve(d, a, &set, b->err);
    for (int k = 0; st == SLIM_OK && k < b->n_deferred; k++)
        in[k] = (slim_tensor_desc){SLIM_F32, g->tensors[g->params[b->deferred[k]].t].d.shape};
    slim__infer_result r;
    int s = -1;
    if (st == SLIM_OK)
        st = slim__role_step(b, SLIM__STEP_UPDATE, -1, SLIM__ROLE_GLOBAL_NORM, &set, in,
                             b->n_deferred, slim__role_op(SLIM__ROLE_GLOBAL_NORM)->name, &r, &s);
    slim__attrs_fini(&set);
    slim_attrs_free(a);
    free(in);
    if (st != SLIM_OK)
        return st == SLIM_ENOMEM ? slim__oom(b->err) : st;
    const int vi = p->steps[s].v_in, vo = p->steps[s].v_out;
    for (int k = 0; k < b->n_deferred; k++) {
        slim_tid t = g->params[b->deferred[k]].t;
        slim__set_view(p, vi + k, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape}, p->gbuf[t],
                       NULL);
    }
    for (int j = 0; j < 2; j++) {
        int ob = slim__new_buf(p, slim__desc_bytes(&r.out[j]));
        if (ob < 0)
            return slim__oom(b->err);
        slim__set_view(p, vo + j, r.out[j], ob, NULL);
    }
    p->steps[s].node_id = (uint32_t)(g->n_nodes + g->n_params);
    p->steps[s].keep_out = 2u; /* the norm stays readable after the run */
    p->norm_step = s;
    b->scale_view = vo;
    for (int k = 0; k < b->n_deferred; k++) {
        st = add_update(b, b->deferred[k]);
        if (st != SLIM_OK)
            return st;
    }
    return SLIM_OK;
}
