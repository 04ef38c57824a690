/* engine/node.c - one node's inference (its op's infer, checked) and the
 * kernel a step runs; shared by the graph builder, the compiler and the
 * single-op runner (runtime/oprun.c). */
#include "engine/node.h"
#include "core/error.h"
#include "engine/registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct infer_priv {
    const slim__attr_set *set; /* first: read by the attribute accessors */
    slim__infer_result *r;
    const slim_op_desc *d;
    const char *node;
    slim_error *err;
    bool failed;
    bool out_set[SLIM__MAX_OUTPUTS];
} infer_priv;

static bool shape_ok(const slim_shape *s)
{
    if (s->rank < 0 || s->rank > SLIM_MAX_DIMS)
        return false;
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] < 0)
            return false;
    return true;
}

static void set_output(slim_infer_ctx *c, int i, slim_dtype dtype, const slim_shape *shape)
{
    infer_priv *p = c->priv;
    if (i < 0 || i >= p->d->n_outputs || !shape || !shape_ok(shape) || !slim_dtype_size(dtype)) {
        p->failed = true;
        slim__error(p->err, SLIM_EINTERNAL, "node '%s' (%s): op declared a bad output %d", p->node,
                    p->d->name, i);
        return;
    }
    if (!slim__shape_bytes_fit(shape, slim_dtype_size(dtype))) {
        char b[128];
        p->failed = true;
        slim__error(p->err, SLIM_ESHAPE, "node '%s' (%s): output %d %s is too large", p->node,
                    p->d->name, i, slim__shape_str(shape, b, sizeof b));
        return;
    }
    p->r->out[i].dtype = dtype;
    p->r->out[i].shape = *shape;
    p->out_set[i] = true;
}

static int add_saved(slim_infer_ctx *c, slim_dtype dtype, const slim_shape *shape)
{
    infer_priv *p = c->priv;
    if (p->r->n_saved == SLIM__MAX_SAVED || !shape || !shape_ok(shape) || !slim_dtype_size(dtype)) {
        p->failed = true;
        slim__error(p->err, SLIM_EINTERNAL, "node '%s' (%s): op declared a bad saved buffer",
                    p->node, p->d->name);
        return 0;
    }
    int k = p->r->n_saved++;
    p->r->saved[k].dtype = dtype;
    p->r->saved[k].shape = *shape;
    return k;
}

static void set_workspace(slim_infer_ctx *c, size_t bytes)
{
    infer_priv *p = c->priv;
    p->r->ws_bytes = bytes;
}

static void set_backward_reads(slim_infer_ctx *c, uint32_t inputs, uint32_t outputs)
{
    infer_priv *p = c->priv;
    p->r->bwd_in = inputs;
    p->r->bwd_out = outputs;
}

static void set_in_place(slim_infer_ctx *c, int out, int in)
{
    infer_priv *p = c->priv;
    if (out >= 0 && out < p->r->n_out && in >= 0 && in < c->n_inputs && in < 32)
        p->r->in_place[out] |= 1u << in;
}

static void set_backward_in_place(slim_infer_ctx *c, int in, int out)
{
    infer_priv *p = c->priv;
    if (out >= 0 && out < p->r->n_out && out < 32 && in >= 0 && in < c->n_inputs &&
        in < SLIM_MAX_INPUTS)
        p->r->bwd_in_place[in] |= 1u << out;
}

static slim_status fail(slim_infer_ctx *c, slim_status code, const char *fmt, ...)
{
    infer_priv *p = c->priv;
    char msg[900];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    p->failed = true;
    return slim__error(p->err, code ? code : SLIM_EINVAL, "node '%s' (%s): %s", p->node, p->d->name,
                       msg);
}

slim_status slim__node_infer(const slim_op_desc *d, const slim__attr_set *attrs,
                             const slim_tensor_desc *in, int n_in, bool training, int nth,
                             const char *node_name, slim__infer_result *r, slim_error *err)
{
    memset(r, 0, sizeof *r);
    if (n_in < d->min_inputs || (n_in > d->max_inputs && !(d->flags & SLIM_OP_LIST))) {
        if (d->min_inputs == d->max_inputs)
            return slim__error(err, SLIM_EINVAL, "node '%s' (%s): takes %d input%s, got %d",
                               node_name, d->name, d->min_inputs, d->min_inputs == 1 ? "" : "s",
                               n_in);
        return slim__error(err, SLIM_EINVAL, "node '%s' (%s): takes %d to %d inputs, got %d",
                           node_name, d->name, d->min_inputs, d->max_inputs, n_in);
    }
    r->n_out = d->n_outputs;
    r->bwd_in = r->bwd_out = ~0u;
    if (d->params_size) {
        r->params = calloc(1, d->params_size);
        if (!r->params)
            return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    infer_priv p = {.set = attrs, .r = r, .d = d, .node = node_name, .err = err};
    slim_infer_ctx c = {
        .n_inputs = n_in,
        .inputs = in,
        .training = training,
        .nth = nth < 1 ? 1 : nth,
        .params = r->params,
        .priv = &p,
        .set_output = set_output,
        .add_saved = add_saved,
        .set_workspace = set_workspace,
        .fail = fail,
        .set_backward_reads = set_backward_reads,
        .set_in_place = set_in_place,
        .set_backward_in_place = set_backward_in_place,
    };
    slim__attrs_bind(&c);
    slim_status st = d->infer(&c);
    if (st == SLIM_OK && p.failed)
        st = err && err->code ? err->code : SLIM_EINTERNAL;
    if (st != SLIM_OK && !p.failed)
        slim__error(err, st, "node '%s' (%s): %s", node_name, d->name, slim_status_str(st));
    for (int i = 0; st == SLIM_OK && i < d->n_outputs; i++)
        if (!p.out_set[i])
            st = slim__error(err, SLIM_EINTERNAL, "node '%s' (%s): op did not declare output %d",
                             node_name, d->name, i);
    if (st != SLIM_OK)
        slim__infer_result_fini(r);
    return st;
}

void slim__infer_result_fini(slim__infer_result *r)
{
    free(r->params);
    r->params = NULL;
}

slim_kernel_fn slim__pick_kernel(const slim_op_desc *d, bool backward, bool ref, bool *is_ref)
{
    slim_kernel_fn fast = backward ? d->backward : d->forward;
    slim_kernel_fn slow = backward ? d->backward_ref : d->forward_ref;
    if ((ref || slim__force_ref()) && slow) {
        *is_ref = true;
        return slow;
    }
    *is_ref = false;
    return fast;
}
