/* engine/graph.c - building a graph: inputs, parameters, nodes with their
 * shapes inferred as they are added (so errors point at the node that caused
 * them, and later nodes can size their parameters from earlier shapes). */
#include "engine/graph.h"
#include "core/error.h"
#include "core/gemm.h"
#include "core/init.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

slim_status slim_graph_new(const slim_registry *reg, slim_graph **out, slim_error *err)
{
    *out = NULL;
    if (!reg)
        return slim__error(err, SLIM_EINVAL, "slim_graph_new needs a registry");
    slim_graph *g = calloc(1, sizeof *g);
    if (!g)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    g->reg = reg;
    g->loss = -1;
    *out = g;
    return SLIM_OK;
}

void slim_graph_free(slim_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->tensors);
    for (int i = 0; i < g->n_nodes; i++) {
        free(g->nodes[i].name);
        slim__attrs_fini(&g->nodes[i].attrs);
    }
    free(g->nodes);
    for (int i = 0; i < g->n_params; i++) {
        free(g->params[i].name);
        free(g->params[i].data);
        if (g->params[i].init.kind == SLIM_INIT_DATA)
            free((void *)g->params[i].init.data);
    }
    free(g->params);
    slim__names_fini(&g->tensor_names);
    slim__names_fini(&g->node_names);
    slim__names_fini(&g->param_names);
    free(g);
}

static bool grow(void **arr, int *cap, int n, size_t elem)
{
    if (n < *cap)
        return true;
    int nc = *cap ? 2 * *cap : 32;
    void *p = realloc(*arr, (size_t)nc * elem);
    if (!p)
        return false;
    *arr = p;
    *cap = nc;
    return true;
}

slim_status slim_graph_find(const slim_graph *g, const char *name, slim_tid *out)
{
    int i = g ? slim__names_get(&g->tensor_names, name) : -1;
    if (i < 0)
        return SLIM_ENOTFOUND;
    *out = i;
    return SLIM_OK;
}

static bool node_exists(const slim_graph *g, const char *name)
{
    return slim__names_get(&g->node_names, name) >= 0;
}

static slim_status check_name(const slim_graph *g, const char *name, slim_error *err)
{
    slim_tid t;
    if (!name || !name[0])
        return slim__error(err, SLIM_EINVAL, "a name is required");
    if (slim_graph_find(g, name, &t) == SLIM_OK || node_exists(g, name))
        return slim__error(err, SLIM_EEXIST, "the name '%s' is already used in this graph", name);
    return SLIM_OK;
}

static slim_status new_tensor(slim_graph *g, const char *name, slim_tensor_desc d, slim__tkind kind,
                              int producer, int out_index, slim_tid *out, slim_error *err)
{
    if (!grow((void **)&g->tensors, &g->cap_tensors, g->n_tensors, sizeof *g->tensors))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim__tinfo *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    t->name = strdup(name);
    if (!t->name || !slim__names_put(&g->tensor_names, t->name, g->n_tensors)) {
        free(t->name);
        t->name = NULL;
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    t->d = d;
    t->kind = kind;
    t->producer = producer;
    t->out_index = out_index;
    *out = g->n_tensors++;
    return SLIM_OK;
}

/* A shape for an input or parameter: rank in range, positive dimensions,
 * and an element count whose bytes (elem_size each) fit int64, so that
 * nothing downstream (numel, byte sizes, the memory plan) overflows. */
static slim_status check_shape(const slim_shape *s, size_t elem_size, const char *what,
                               const char *name, slim_error *err)
{
    if (!s || s->rank < 0 || s->rank > SLIM_MAX_DIMS)
        return slim__error(err, SLIM_EINVAL, "%s '%s': rank must be 0..%d", what, name,
                           SLIM_MAX_DIMS);
    for (int i = 0; i < s->rank; i++)
        if (s->dim[i] <= 0)
            return slim__error(err, SLIM_ESHAPE, "%s '%s': dimension %d is %lld, must be positive",
                               what, name, i, (long long)s->dim[i]);
    if (!slim__shape_bytes_fit(s, elem_size ? elem_size : 1)) {
        char b[160];
        return slim__error(err, SLIM_ESHAPE,
                           "%s '%s': shape %s is too large (its size in bytes overflows "
                           "a 64-bit integer)",
                           what, name, slim__shape_str(s, b, sizeof b));
    }
    return SLIM_OK;
}

slim_status slim_graph_input(slim_graph *g, const char *name, slim_dtype dtype,
                             const slim_shape *shape, slim_tid *out, slim_error *err)
{
    slim_status st = check_name(g, name, err);
    if (st == SLIM_OK)
        st = check_shape(shape, slim_dtype_size(dtype), "input", name, err);
    if (st == SLIM_OK && !slim_dtype_size(dtype))
        st = slim__error(err, SLIM_EINVAL, "input '%s': unknown dtype %d", name, (int)dtype);
    if (st != SLIM_OK)
        return st;
    slim_tensor_desc d = {dtype, *shape};
    return new_tensor(g, name, d, SLIM__T_INPUT, -1, 0, out, err);
}

slim_status slim_graph_param(slim_graph *g, const char *name, const slim_shape *shape,
                             const slim_init *init, const slim_param_opts *opts, slim_tid *out,
                             slim_error *err)
{
    slim_status st = check_name(g, name, err);
    if (st == SLIM_OK)
        st = check_shape(shape, sizeof(float), "parameter", name, err);
    if (st != SLIM_OK)
        return st;
    if (!grow((void **)&g->params, &g->cap_params, g->n_params, sizeof *g->params) ||
        !slim__names_reserve(&g->param_names, g->n_params + 1))
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    slim__param *p = &g->params[g->n_params];
    memset(p, 0, sizeof *p);
    int64_t n = slim_shape_numel(shape);
    size_t bytes = ((size_t)n * sizeof(float) + 63) & ~(size_t)63;
    p->data = aligned_alloc(64, bytes + SLIM__BLIS_SLACK);
    p->name = strdup(name);
    if (!p->data || !p->name) {
        free(p->data);
        free(p->name);
        return slim__error(err, SLIM_ENOMEM, "out of memory for parameter '%s' (%lld floats)", name,
                           (long long)n);
    }
    memset(p->data, 0, (size_t)n * sizeof(float));
    if (init)
        p->init = *init;
    if (init && init->kind == SLIM_INIT_DATA) {
        /* the graph keeps its own copy, for every (re)initialization */
        float *copy = init->data ? malloc((size_t)n * sizeof(float) + 1) : NULL;
        if (!copy) {
            free(p->data);
            free(p->name);
            return slim__error(err, init->data ? SLIM_ENOMEM : SLIM_EINVAL,
                               init->data ? "out of memory for parameter '%s'"
                                          : "parameter '%s': SLIM_INIT_DATA without data",
                               name);
        }
        memcpy(copy, init->data, (size_t)n * sizeof(float));
        p->init.data = copy;
    }
    p->flags = opts ? opts->flags : SLIM_PARAM_TRAINABLE;
    p->lr_mult = opts && opts->lr_mult > 0 ? opts->lr_mult : 1.0f;
    slim_tensor_desc d = {SLIM_F32, *shape};
    st = new_tensor(g, name, d, SLIM__T_PARAM, g->n_params, 0, &p->t, err);
    if (st != SLIM_OK) {
        free(p->data);
        free(p->name);
        if (p->init.kind == SLIM_INIT_DATA)
            free((void *)p->init.data);
        return st;
    }
    slim__names_put(&g->param_names, p->name, g->n_params); /* room reserved above */
    g->n_params++;
    g->params_ready = false;
    *out = p->t;
    return SLIM_OK;
}

slim_status slim_graph_add(slim_graph *g, const char *op, const char *name, const slim_tid *inputs,
                           int n_inputs, const slim_attrs *attrs, slim_tid *outputs,
                           int max_outputs, int *n_outputs, slim_error *err)
{
    if (!g || !op)
        return slim__error(err, SLIM_EINVAL, "slim_graph_add needs a graph and an op name");
    const slim_op_desc *d = slim_registry_find(g->reg, op);
    if (!d)
        return slim__error(err, SLIM_ENOTFOUND,
                           "node '%s': unknown op '%s' (not built in, and "
                           "no loaded plugin registers it)",
                           name ? name : "?", op);
    slim_status st = check_name(g, name, err);
    if (st != SLIM_OK)
        return st;
    if (n_inputs < 0 || n_inputs > SLIM_MAX_INPUTS)
        return slim__error(err, SLIM_EINVAL, "node '%s' (%s): %d inputs is out of range", name, op,
                           n_inputs);
    slim_tensor_desc in[SLIM_MAX_INPUTS];
    for (int i = 0; i < n_inputs; i++) {
        if (inputs[i] < 0 || inputs[i] >= g->n_tensors)
            return slim__error(err, SLIM_EINVAL,
                               "node '%s' (%s): input %d is not a tensor of "
                               "this graph",
                               name, op, i);
        in[i] = g->tensors[inputs[i]].d;
        if ((d->mutates_inputs >> i) & 1u) {
            const slim__tinfo *ti = &g->tensors[inputs[i]];
            if (ti->kind != SLIM__T_PARAM)
                return slim__error(err, SLIM_EINVAL,
                                   "node '%s' (%s): input %d ('%s') is written by the op, so it "
                                   "must be a parameter or state tensor",
                                   name, op, i, ti->name);
        }
    }
    slim__node node = {0};
    node.d = d;
    st = slim__attrs_resolve(d, attrs, &node.attrs, err);
    if (st != SLIM_OK) {
        slim__error_prefix(err, "node '%s': ", name);
        return st;
    }
    slim__infer_result r;
    st = slim__node_infer(d, &node.attrs, in, n_inputs, true, 1, name, &r, err);
    if (st != SLIM_OK) {
        slim__attrs_fini(&node.attrs);
        return st;
    }
    node.name = strdup(name);
    if (!node.name || !grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes, sizeof *g->nodes) ||
        !slim__names_reserve(&g->node_names, g->n_nodes + 1)) {
        free(node.name);
        slim__attrs_fini(&node.attrs);
        slim__infer_result_fini(&r);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    node.n_in = n_inputs;
    memcpy(node.in, inputs, (size_t)n_inputs * sizeof *inputs);
    node.n_out = r.n_out;
    int idx = g->n_nodes;
    for (int j = 0; j < r.n_out; j++) {
        char tname[512];
        if (j == 0)
            snprintf(tname, sizeof tname, "%s", name);
        else
            snprintf(tname, sizeof tname, "%s:%d", name, j);
        st = new_tensor(g, tname, r.out[j], SLIM__T_NODE, idx, j, &node.out[j], err);
        if (st != SLIM_OK) {
            /* tensors added so far stay unnamed orphans only on out-of-memory */
            free(node.name);
            slim__attrs_fini(&node.attrs);
            slim__infer_result_fini(&r);
            return st;
        }
    }
    slim__infer_result_fini(&r);
    slim__names_put(&g->node_names, node.name, idx); /* room reserved above */
    g->nodes[g->n_nodes++] = node;
    for (int j = 0; j < node.n_out && outputs && j < max_outputs; j++)
        outputs[j] = node.out[j];
    if (n_outputs)
        *n_outputs = node.n_out;
    return SLIM_OK;
}

slim_status slim_graph_tensor_info(const slim_graph *g, slim_tid t, slim_tensor_desc *desc)
{
    if (!g || t < 0 || t >= g->n_tensors)
        return SLIM_EINVAL;
    *desc = g->tensors[t].d;
    return SLIM_OK;
}

const char *slim_graph_tensor_name(const slim_graph *g, slim_tid t)
{
    if (!g || t < 0 || t >= g->n_tensors)
        return NULL;
    return g->tensors[t].name;
}

slim_status slim_graph_set_loss(slim_graph *g, slim_tid loss, slim_error *err)
{
    if (!g || loss < 0 || loss >= g->n_tensors)
        return slim__error(err, SLIM_EINVAL, "the loss is not a tensor of this graph");
    const slim__tinfo *t = &g->tensors[loss];
    if (t->d.dtype != SLIM_F32 || slim_shape_numel(&t->d.shape) != 1) {
        char b[96];
        return slim__error(err, SLIM_ESHAPE, "the loss '%s' must be a scalar f32, it is %s %s",
                           t->name, slim__dtype_str(t->d.dtype),
                           slim__shape_str(&t->d.shape, b, sizeof b));
    }
    g->loss = loss;
    g->tensors[loss].marked = true;
    return SLIM_OK;
}

slim_status slim_graph_mark_output(slim_graph *g, slim_tid t, slim_error *err)
{
    if (!g || t < 0 || t >= g->n_tensors)
        return slim__error(err, SLIM_EINVAL, "not a tensor of this graph");
    g->tensors[t].marked = true;
    return SLIM_OK;
}

int slim_graph_param_count(const slim_graph *g)
{
    return g ? g->n_params : 0;
}

slim_status slim_graph_param_at(const slim_graph *g, int i, const char **name, slim_tensor *view,
                                unsigned *flags)
{
    if (!g || i < 0 || i >= g->n_params)
        return SLIM_EINVAL;
    const slim__param *p = &g->params[i];
    if (name)
        *name = p->name;
    if (view)
        *view = (slim_tensor){SLIM_F32, g->tensors[p->t].d.shape, p->data};
    if (flags)
        *flags = p->flags;
    return SLIM_OK;
}

slim_status slim_graph_param_get(const slim_graph *g, const char *name, slim_tensor *view,
                                 slim_error *err)
{
    int i = g ? slim__names_get(&g->param_names, name) : -1;
    if (i >= 0)
        return slim_graph_param_at(g, i, NULL, view, NULL);
    return slim__error(err, SLIM_ENOTFOUND, "no parameter named '%s'", name ? name : "(null)");
}

slim_status slim_graph_init_params(slim_graph *g, uint64_t seed, slim_error *err)
{
    if (!g)
        return slim__error(err, SLIM_EINVAL, "no graph");
    for (int i = 0; i < g->n_params; i++) {
        slim__param *p = &g->params[i];
        slim__init_fill(&p->init, &g->tensors[p->t].d.shape, p->data,
                        seed ^ slim__name_hash(p->name));
    }
    g->params_ready = true;
    return SLIM_OK;
}
