/* engine/steps.c - the program's parts (arena buffers, tensor views, steps)
 * and the forward steps: one per live node, in graph order. */
#include "engine/compile.h"
#include "core/error.h"
#include "engine/registry.h"

#include <stdlib.h>
#include <string.h>

slim_status slim__oom(slim_error *err)
{
    return slim__error(err, SLIM_ENOMEM, "out of memory while compiling");
}

int slim__new_buf(slim_program *p, size_t bytes)
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
    b->bytes = (bytes + SLIM__ALIGN - 1) & ~(size_t)(SLIM__ALIGN - 1);
    if (b->bytes == 0)
        b->bytes = SLIM__ALIGN;
    b->first = 1 << 30;
    b->last = -1;
    b->offset = 0;
    return p->n_bufs++;
}

/* A block of n views; returns the first index, -1 when n is 0, -2 on out of memory. */
int slim__new_views(slim_program *p, int n)
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

slim__step *slim__new_step(slim_program *p, slim__step_kind kind, int node)
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

void slim__set_view(slim_program *p, int v, slim_tensor_desc d, int buf, void *data)
{
    p->views[v].dtype = d.dtype;
    p->views[v].shape = d.shape;
    p->views[v].data = data;
    p->view_buf[v] = buf;
}

size_t slim__desc_bytes(const slim_tensor_desc *d)
{
    return (size_t)slim_shape_numel(&d->shape) * slim_dtype_size(d->dtype);
}

void *slim__keep(slim_program *p, void *s)
{
    void **owned = s ? realloc(p->owned, (size_t)(p->n_owned + 1) * sizeof *owned) : NULL;
    if (!owned) {
        free(s);
        return NULL;
    }
    p->owned = owned;
    owned[p->n_owned++] = s;
    return s;
}

slim_status slim__role_step(slim__build *b, slim__step_kind kind, int node, slim__role role,
                            const slim__attr_set *attrs, const slim_tensor_desc *in, int n_in,
                            const char *name, slim__infer_result *r, int *step)
{
    slim_program *p = b->p;
    const slim_op_desc *d = slim__role_op(role);
    const slim__attr_set none = {.desc = d};
    slim_status st =
        slim__node_infer(d, attrs ? attrs : &none, in, n_in, true, p->nth, name, r, b->err);
    if (st != SLIM_OK)
        return st;
    if (r->params && !slim__keep(p, r->params))
        return slim__oom(b->err);
    slim__step *s = slim__new_step(p, kind, node);
    int vi = slim__new_views(p, n_in), vo = slim__new_views(p, r->n_out);
    int ws = r->ws_bytes ? slim__new_buf(p, r->ws_bytes) : -1;
    if (!s || vi < 0 || vo < 0 || (r->ws_bytes && ws < 0))
        return slim__oom(b->err);
    s = &p->steps[p->n_steps - 1];
    s->d = d;
    s->params = r->params;
    s->name = name;
    s->n_in = n_in;
    s->n_out = r->n_out;
    s->v_in = vi;
    s->v_out = vo;
    s->ws_buf = ws;
    s->ws_size = r->ws_bytes;
    bool is_ref;
    s->fn = slim__pick_kernel(d, false, false, &is_ref);
    s->single = is_ref;
    *step = p->n_steps - 1;
    return SLIM_OK;
}

/* Buffer of a graph tensor's value (arena) or its parameter storage. */
static void bind_value(slim__build *b, int v, slim_tid t)
{
    slim_program *p = b->p;
    const slim__tinfo *ti = &b->g->tensors[t];
    if (ti->kind == SLIM__T_PARAM)
        slim__set_view(p, v, ti->d, -1, b->g->params[ti->producer].data);
    else
        slim__set_view(p, v, ti->d, p->tbuf[t], NULL);
}

/* Arena buffers for the values of the graph's inputs and of what live nodes
 * write, and for the gradients backward computes; then a step per live node. */
slim_status slim__forward_steps(slim__build *b)
{
    slim_program *p = b->p;
    slim_graph *g = b->g;
    int nt = g->n_tensors, nn = g->n_nodes;
    bool *written = calloc((size_t)nt + 1, sizeof *written);
    if (!written)
        return slim__oom(b->err);
    for (int n = 0; n < nn; n++)
        for (int j = 0; b->nodes[n].live && j < b->nodes[n].n_out; j++)
            written[b->nodes[n].out[j]] = true;
    for (int t = 0; t < nt; t++) {
        const slim__tinfo *ti = &g->tensors[t];
        if (ti->kind == SLIM__T_INPUT || written[t])
            p->tbuf[t] = slim__new_buf(p, slim__desc_bytes(&ti->d));
        if (b->live[t])
            p->gbuf[t] = slim__new_buf(p, (size_t)slim_shape_numel(&ti->d.shape) * sizeof(float));
        if ((ti->kind == SLIM__T_INPUT || written[t]) && p->tbuf[t] < 0) {
            free(written);
            return slim__oom(b->err);
        }
        if (b->live[t] && p->gbuf[t] < 0) {
            free(written);
            return slim__oom(b->err);
        }
    }
    free(written);

    for (int n = 0; n < nn; n++) {
        const slim__cnode *nd = &b->nodes[n];
        if (!nd->live)
            continue;
        const slim__infer_result *r = &p->infer[n];
        slim__step *s = slim__new_step(p, SLIM__STEP_FWD, n);
        if (!s)
            return slim__oom(b->err);
        s->d = nd->d;
        s->params = r->params;
        s->training = b->node_training[n];
        s->n_in = nd->n_in;
        s->n_out = nd->n_out;
        s->n_saved = r->n_saved;
        s->node_id = (uint32_t)n;
        s->name = nd->name;
        s->op = nd->label ? nd->label : nd->d->name;
        b->fwd_step[n] = p->n_steps - 1;
        int vi = slim__new_views(p, nd->n_in), vo = slim__new_views(p, nd->n_out),
            vs = slim__new_views(p, r->n_saved);
        if (vi < -1 || vo < -1 || vs < -1)
            return slim__oom(b->err);
        s = &p->steps[p->n_steps - 1];
        s->v_in = vi;
        s->v_out = vo;
        s->v_saved = vs;
        for (int i = 0; i < nd->n_in; i++)
            bind_value(b, vi + i, nd->in[i]);
        for (int j = 0; j < nd->n_out; j++)
            bind_value(b, vo + j, nd->out[j]);
        for (int k = 0; k < r->n_saved; k++) {
            int sb = slim__new_buf(p, slim__desc_bytes(&r->saved[k]));
            if (sb < 0)
                return slim__oom(b->err);
            slim__set_view(p, vs + k, r->saved[k], sb, NULL);
        }
        if (r->ws_bytes) {
            s->ws_buf = slim__new_buf(p, r->ws_bytes);
            if (s->ws_buf < 0)
                return slim__oom(b->err);
            s->ws_size = r->ws_bytes;
        }
        bool is_ref;
        s->fn = slim__pick_kernel(s->d, false, false, &is_ref);
        s->single = is_ref;
        p->n_fwd++;
    }
    return SLIM_OK;
}
