/* engine/autodiff.c - reverse-mode differentiation over the live nodes.
 *
 * Which tensors need gradients: the trained parameters, and every f32
 * output of a differentiable node with such an input. Which gradients are
 * computed: from the loss backwards, those of required tensors that reach
 * it. Backward steps run in reverse graph order after a step that seeds
 * d loss / d loss = 1; a tensor with several consumers gets its first
 * contribution in place and each other one through a partial buffer and an
 * accumulate step. Where a parameter's gradient becomes final, its update
 * follows (engine/update.c). */
#include "engine/compile.h"
#include "core/error.h"

#include <string.h>

static bool diff_input(const slim__cnode *nd, int i)
{
    return !((nd->d->nondiff_inputs >> i) & 1u);
}

slim_status slim__autodiff(slim__build *b)
{
    slim_graph *g = b->g;
    int nn = g->n_nodes;
    if (!b->backward)
        return SLIM_OK;
    for (int n = 0; n < nn; n++) {
        const slim__cnode *nd = &b->nodes[n];
        if (!nd->live || !nd->d->backward)
            continue;
        bool r = false;
        for (int i = 0; i < nd->n_in; i++)
            r |= b->req[nd->in[i]] && diff_input(nd, i);
        for (int j = 0; j < nd->n_out; j++)
            b->req[nd->out[j]] = r && g->tensors[nd->out[j]].d.dtype == SLIM_F32;
    }
    if (!b->req[g->loss])
        return slim__error(b->err, SLIM_ESTATE,
                           "the loss '%s' does not depend on any trainable "
                           "parameter%s",
                           g->tensors[g->loss].name,
                           b->o->trainable_scopes ? " within the trainable scopes" : "");
    b->live[g->loss] = true;
    for (int n = nn - 1; n >= 0; n--) {
        const slim__cnode *nd = &b->nodes[n];
        if (!nd->live || !nd->d->backward)
            continue;
        bool any = false;
        for (int j = 0; j < nd->n_out; j++)
            any |= b->live[nd->out[j]];
        if (!any)
            continue;
        bool gives = false;
        for (int i = 0; i < nd->n_in; i++)
            if (b->req[nd->in[i]] && diff_input(nd, i)) {
                b->live[nd->in[i]] = true;
                b->contrib[nd->in[i]]++;
                gives = true;
            }
        b->bwd[n] = gives;
    }
    return SLIM_OK;
}

/* d loss / d loss = 1. */
static slim_status seed_step(slim__build *b)
{
    slim_program *p = b->p;
    slim_tid loss = b->g->loss;
    const slim_tensor_desc d = b->g->tensors[loss].d;
    slim__infer_result r;
    int s;
    slim_status st = slim__role_step(b, SLIM__STEP_SEED, -1, SLIM__ROLE_LOSS_SEED, NULL, &d, 1,
                                     "loss gradient", &r, &s);
    if (st != SLIM_OK)
        return st;
    slim__set_view(p, p->steps[s].v_in, d, p->tbuf[loss], NULL);
    slim__set_view(p, p->steps[s].v_out, r.out[0], p->gbuf[loss], NULL);
    return SLIM_OK;
}

/* The partial gradient in buffer part is added into tensor t's gradient
 * after node n's backward step. */
static slim_status sum_step(slim__build *b, int n, int part, slim_tid t)
{
    slim_program *p = b->p;
    const slim_tensor_desc gd = {SLIM_F32, b->g->tensors[t].d.shape}, in[2] = {gd, gd};
    slim__infer_result r;
    int s;
    slim_status st = slim__role_step(b, SLIM__STEP_ACC, n, SLIM__ROLE_GRADIENT_SUM, NULL, in, 2,
                                     b->nodes[n].name, &r, &s);
    if (st != SLIM_OK)
        return st;
    const int v = p->steps[s].v_in;
    slim__set_view(p, v, gd, p->gbuf[t], NULL);
    slim__set_view(p, v + 1, gd, part, NULL);
    slim__set_view(p, p->steps[s].v_out, gd, p->gbuf[t], NULL);
    return SLIM_OK;
}

/* Node n's backward step: it shares the forward step's views of inputs,
 * outputs and saved buffers; each input gradient goes to the tensor's
 * gradient buffer (first contribution) or to a partial one. */
static slim_status backward_step(slim__build *b, int n)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    const slim__cnode *nd = &b->nodes[n];
    if (!slim__new_step(p, SLIM__STEP_BWD, n))
        return slim__oom(b->err);
    int vd = slim__new_views(p, nd->n_out), vg = slim__new_views(p, nd->n_in);
    if (vd < 0 || vg < -1)
        return slim__oom(b->err);
    slim__step *s = &p->steps[p->n_steps - 1];
    const slim__step *f = &p->steps[b->fwd_step[n]];
    s->d = nd->d;
    s->params = f->params;
    s->training = f->training;
    s->n_in = f->n_in;
    s->n_out = f->n_out;
    s->n_saved = f->n_saved;
    s->v_in = f->v_in;
    s->v_out = f->v_out;
    s->v_saved = f->v_saved;
    /* its own scratch, live for this step only (the forward's would live
     * from forward to backward: every conv's packed filters at once at the
     * peak) */
    s->ws_buf = -1;
    s->ws_size = f->ws_size;
    if (f->ws_size) {
        int wb = slim__new_buf(p, f->ws_size);
        if (wb < 0)
            return slim__oom(b->err);
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
        slim__set_view(p, vd + j, (slim_tensor_desc){SLIM_F32, g->tensors[t].d.shape},
                       b->live[t] ? p->gbuf[t] : -1, NULL);
    }
    bool is_ref;
    s->fn = slim__pick_kernel(nd->d, true, false, &is_ref);
    s->single = is_ref;
    p->n_bwd++;
    int acc_from[SLIM_MAX_INPUTS], acc_to[SLIM_MAX_INPUTS], n_acc = 0;
    for (int i = 0; i < nd->n_in; i++) {
        slim_tid t = nd->in[i];
        slim_tensor_desc gd = {SLIM_F32, g->tensors[t].d.shape};
        if (!b->req[t] || !diff_input(nd, i)) {
            slim__set_view(p, vg + i, gd, -1, NULL);
        } else if (b->seen[t]++ == 0) {
            slim__set_view(p, vg + i, gd, p->gbuf[t], NULL);
        } else {
            int tb = slim__new_buf(p, slim__desc_bytes(&gd));
            if (tb < 0)
                return slim__oom(b->err);
            slim__set_view(p, vg + i, gd, tb, NULL);
            acc_from[n_acc] = tb;
            acc_to[n_acc++] = t;
        }
    }
    for (int a = 0; a < n_acc; a++) {
        slim_status st = sum_step(b, n, acc_from[a], acc_to[a]);
        if (st != SLIM_OK)
            return st;
    }
    /* parameters whose gradient is now final */
    for (int i = 0; i < nd->n_in; i++) {
        slim_tid t = nd->in[i];
        const slim__tinfo *ti = &g->tensors[t];
        if (ti->kind != SLIM__T_PARAM || !b->req[t] || b->seen[t] != b->contrib[t])
            continue;
        b->seen[t]++; /* once, even if the node uses it twice */
        slim_status st = slim__gradient_final(b, ti->producer);
        if (st != SLIM_OK)
            return st;
    }
    return SLIM_OK;
}

slim_status slim__backward_steps(slim__build *b)
{
    if (!b->backward)
        return SLIM_OK;
    slim_status st = seed_step(b);
    for (int n = b->g->n_nodes - 1; n >= 0 && st == SLIM_OK; n--)
        if (b->bwd[n])
            st = backward_step(b, n);
    return st;
}
