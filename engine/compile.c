/* engine/compile.c - from a graph to a program, in passes (engine/compile.h):
 *
 *  1. prune: the nodes the marked outputs need (all of them when none is
 *     marked), and with a loss the parameters training updates (trainable,
 *     within the trainable scopes);
 *  2. rewrite (engine/rewrite.c): in inference, nodes fused into one step;
 *  3. infer: each node again for the mode (training or not) and the thread
 *     count: its kernels' parameters, saved buffers and workspace;
 *  4. autodiff (engine/autodiff.c): which tensors need and get gradients,
 *     and which nodes run backward;
 *  5. slots (engine/update.c): the optimizer's per-parameter state;
 *  6. steps: the buffers of values and gradients and a forward step per node
 *     (engine/steps.c); the loss's seed, backward steps in reverse order
 *     with gradient sums (engine/autodiff.c), each parameter's update right
 *     after its gradient is final (engine/update.c); across processes a
 *     step there hands the gradient to its allreduce and the updates wait
 *     until after backward, as with global-norm clipping, after the norm;
 *  7. plan (engine/plan.c): buffer lifetimes -> offsets in one arena, which
 *     is allocated (slim_graph_plan stops before). run allocates nothing. */
#include "engine/compile.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

/* 1. What the loss and the marked outputs need; the trained parameters. */
static slim_status prune(slim__build *b)
{
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    bool any_marked = false;
    for (int t = 0; t < nt; t++)
        any_marked |= g->tensors[t].marked;
    bool *tneed = calloc((size_t)nt + 1, sizeof *tneed);
    if (!tneed)
        return slim__oom(b->err);
    for (int t = 0; t < nt; t++)
        tneed[t] = g->tensors[t].marked || !any_marked;
    for (int n = nn - 1; n >= 0; n--) {
        slim__cnode *nd = &b->nodes[n];
        for (int j = 0; j < nd->n_out; j++)
            nd->live |= tneed[nd->out[j]];
        for (int i = 0; nd->live && i < nd->n_in; i++)
            tneed[nd->in[i]] = true;
    }
    free(tneed);
    /* training without a loss runs forward in training mode only (batch
     * statistics, random ops): useful for statistics passes and conformance */
    b->backward = b->p->training && g->loss >= 0;
    if (b->p->training && g->loss < 0 && b->o->optimizer)
        return slim__error(b->err, SLIM_ESTATE,
                           "training with an optimizer needs a loss "
                           "(slim_graph_set_loss)");
    const char *scopes = b->o->trainable_scopes;
    for (int i = 0; b->backward && i < g->n_params; i++) {
        const slim__param *pa = &g->params[i];
        b->req[pa->t] = (pa->flags & SLIM_PARAM_TRAINABLE) &&
                        (!scopes || !scopes[0] || slim__in_scopes(pa->name, scopes));
    }
    return SLIM_OK;
}

/* 3. Each live node for this mode and thread count. A node that writes
 * state (batch-norm statistics) while none of its trainable inputs is
 * trained here is frozen: it runs as in inference (moving statistics, no
 * state updates), as fine-tuning with trainable_scopes expects (unless
 * train_frozen_batch_norm: TF-Slim's batch statistics and moving-average
 * updates there too). */
static slim_status infer(slim__build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    for (int n = 0; n < g->n_nodes; n++) {
        const slim__cnode *nd = &b->nodes[n];
        if (!nd->live)
            continue;
        slim_tensor_desc in[SLIM_MAX_INPUTS];
        for (int i = 0; i < nd->n_in; i++)
            in[i] = g->tensors[nd->in[i]].d;
        bool training = p->training;
        if (training && b->backward && nd->d->mutates_inputs && !b->o->train_frozen_batch_norm) {
            bool any_param = false, any_trained = false;
            for (int i = 0; i < nd->n_in; i++) {
                const slim__tinfo *ti = &g->tensors[nd->in[i]];
                if (ti->kind != SLIM__T_PARAM || ((nd->d->mutates_inputs >> i) & 1u))
                    continue;
                any_param = true;
                any_trained |= b->req[nd->in[i]];
            }
            training = !any_param || any_trained;
        }
        b->node_training[n] = training;
        slim_status st = slim__node_infer(nd->d, &nd->attrs, in, nd->n_in, training, p->nth,
                                          g->nodes[n].name, &p->infer[n], b->err);
        if (st != SLIM_OK)
            return st;
        for (int j = 0; j < nd->n_out; j++) {
            const slim_tensor_desc *a = &p->infer[n].out[j], *e = &g->tensors[nd->out[j]].d;
            if (a->dtype != e->dtype || !slim_shape_equal(&a->shape, &e->shape))
                return slim__error(b->err, SLIM_EINTERNAL,
                                   "node '%s' (%s): output %d changes shape between training "
                                   "and inference, or through a rewrite (an op bug)",
                                   nd->name, nd->d->name, j);
        }
    }
    return SLIM_OK;
}

static slim_status compile(slim__build *b)
{
    slim_status st = prune(b);
    if (st == SLIM_OK)
        st = slim__rewrite(b);
    if (st == SLIM_OK)
        st = infer(b);
    if (st == SLIM_OK)
        st = slim__autodiff(b);
    if (st == SLIM_OK)
        st = slim__slots(b);
    if (st == SLIM_OK)
        st = slim__forward_steps(b);
    if (st == SLIM_OK)
        st = slim__backward_steps(b);
    if (st == SLIM_OK)
        st = slim__deferred_updates(b);
    if (st == SLIM_OK)
        st = slim__plan(b->p, !b->plan_only, b->err);
    return st;
}

/* The per-step names and ops profiles report. */
static slim_status name_steps(slim_program *p, slim_error *err)
{
    p->times = calloc((size_t)p->n_steps + 1, sizeof *p->times);
    if (!p->times)
        return slim__oom(err);
    for (int s = 0; s < p->n_steps; s++) {
        const slim__step *sp = &p->steps[s];
        p->times[s].name = sp->name;
        p->times[s].op = sp->op ? sp->op : sp->d->name;
        p->times[s].phase = sp->kind == SLIM__STEP_SEED ? 1 : (int)sp->kind;
    }
    return SLIM_OK;
}

static void build_fini(slim__build *b)
{
    if (b->opt)
        slim__attrs_fini(&b->opt_attrs);
    for (int n = 0; b->nodes && n < b->g->n_nodes; n++)
        if (b->nodes[n].owns_attrs)
            slim__attrs_fini(&b->nodes[n].attrs);
    free(b->nodes);
    free(b->node_training);
    free(b->req);
    free(b->live);
    free(b->bwd);
    free(b->contrib);
    free(b->seen);
    free(b->fwd_step);
    free(b->deferred);
}

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
        return slim__oom(err);
    p->g = g;
    p->training = o.training;
    p->nth = o.num_threads ? o.num_threads : 1;
    p->norm_step = -1;
    if (o.collective && o.training) {
        p->coll = *o.collective;
        p->has_coll = p->coll.grad_ready && p->coll.grad_wait;
    }
    size_t nt = (size_t)g->n_tensors + 1, nn = (size_t)g->n_nodes + 1;
    slim__build b = {.p = p, .g = g, .o = &o, .plan_only = plan_only, .err = err};
    b.nodes = calloc(nn, sizeof *b.nodes);
    b.node_training = calloc(nn, sizeof(bool));
    b.bwd = calloc(nn, sizeof(bool));
    b.fwd_step = calloc(nn, sizeof(int));
    b.req = calloc(nt, sizeof(bool));
    b.live = calloc(nt, sizeof(bool));
    b.contrib = calloc(nt, sizeof(int));
    b.seen = calloc(nt, sizeof(int));
    b.deferred = calloc((size_t)g->n_params + 1, sizeof(int));
    p->tbuf = malloc(nt * sizeof(int));
    p->gbuf = malloc(nt * sizeof(int));
    p->n_infer = g->n_nodes + g->n_params; /* nodes, updates */
    p->infer = calloc((size_t)p->n_infer + 1, sizeof *p->infer);
    slim_status st = SLIM_OK;
    if (!b.nodes || !b.node_training || !b.bwd || !b.fwd_step || !b.req || !b.live || !b.contrib ||
        !b.seen || !b.deferred || !p->tbuf || !p->gbuf || !p->infer)
        st = slim__oom(err);
    for (int n = 0; st == SLIM_OK && n < g->n_nodes; n++) {
        const slim__node *gn = &g->nodes[n];
        slim__cnode *cn = &b.nodes[n];
        cn->d = gn->d;
        cn->attrs = gn->attrs;
        cn->n_in = gn->n_in;
        cn->n_out = gn->n_out;
        memcpy(cn->in, gn->in, (size_t)gn->n_in * sizeof *cn->in);
        memcpy(cn->out, gn->out, (size_t)gn->n_out * sizeof *cn->out);
        cn->name = gn->name;
    }
    for (int t = 0; st == SLIM_OK && t < g->n_tensors; t++)
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
    if (st == SLIM_OK)
        st = name_steps(p, err);
    build_fini(&b);
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
