/*
 * interop/onnx_export.c - slim graphs -> ONNX models (see onnx_export.h):
 * which nodes are needed, and the ModelProto written with protobuf-c. The
 * ops are onnx_export_ops.c; what they write with (names, nodes,
 * initializers, values and their layouts) is onnx_export_build.c.
 */
#include "interop/onnx_export.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "interop/onnx_export_int.h"

/* ---- the export ------------------------------------------------------------------------ */

static void ex_free(xp_ex *x)
{
    for (size_t i = 0; i < x->n_mem; i++)
        free(x->mem[i]);
    free(x->mem);
    free(x->node);
    free(x->init);
    slim__names_fini(&x->names);
    slim__names_fini(&x->node_names);
    free(x->val);
    free(x->out_name);
    free(x->batched);
    free(x->uses);
    free(x->need);
    free(x->fold);
}

static int64_t ir_version(int opset)
{
    /* ONNX's versioning table: the IR version each release wrote with its opset */
    return opset <= 14 ? 7 : opset <= 18 ? 8 : opset <= 20 ? 9 : 10;
}

static Onnx__ValueInfoProto *value_info(xp_ex *x, const char *name, const slim_shape *s,
                                        const int *order, bool dyn)
{
    Onnx__ValueInfoProto *v = xp_alloc(x, sizeof *v);
    Onnx__TypeProto *tp = xp_alloc(x, sizeof *tp);
    Onnx__TypeProto__Tensor *tt = xp_alloc(x, sizeof *tt);
    Onnx__TensorShapeProto *sh = xp_alloc(x, sizeof *sh);
    Onnx__TensorShapeProto__Dimension **dims =
        xp_alloc(x, (size_t)(s->rank ? s->rank : 1) * sizeof *dims);
    if (!v || !tp || !tt || !sh || !dims)
        return NULL;
    onnx__value_info_proto__init(v);
    onnx__type_proto__init(tp);
    onnx__type_proto__tensor__init(tt);
    onnx__tensor_shape_proto__init(sh);
    for (int i = 0; i < s->rank; i++) {
        Onnx__TensorShapeProto__Dimension *d = xp_alloc(x, sizeof *d);
        if (!d)
            return NULL;
        onnx__tensor_shape_proto__dimension__init(d);
        if (i == 0 && dyn) {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM;
            d->dim_param = xp_strdup(x, "N");
        } else {
            d->value_case = ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE;
            d->dim_value = s->dim[order ? order[i] : i];
        }
        dims[i] = d;
    }
    sh->dim = dims;
    sh->n_dim = (size_t)s->rank;
    tt->has_elem_type = true;
    tt->elem_type = ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT;
    tt->shape = sh;
    tp->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    tp->tensor_type = tt;
    v->name = xp_strdup(x, name);
    v->type = tp;
    return v;
}

/* Which nodes the outputs need, what depends on the input, how often each tensor is used. */
static void plan(xp_ex *x, const slim_tid *outs, int n_out, slim_tid input)
{
    const slim_graph *g = x->g;
    bool *want = calloc((size_t)g->n_tensors, sizeof *want);
    if (!want) {
        xp_fail(x, SLIM_ENOMEM, "out of memory");
        return;
    }
    for (int i = 0; i < n_out; i++) {
        want[outs[i]] = true;
        x->uses[outs[i]]++;
    }
    for (int n = g->n_nodes - 1; n >= 0; n--) {
        const slim__node *nd = &g->nodes[n];
        for (int k = 0; k < nd->n_out && !x->need[n]; k++)
            x->need[n] = want[nd->out[k]];
        for (int i = 0; x->need[n] && i < nd->n_in; i++) {
            want[nd->in[i]] = true;
            x->uses[nd->in[i]]++;
        }
    }
    free(want);
    x->batched[input] = true;
    for (int n = 0; n < g->n_nodes; n++) {
        const slim__node *nd = &g->nodes[n];
        bool b = false;
        for (int i = 0; i < nd->n_in; i++)
            b = b || x->batched[nd->in[i]];
        for (int k = 0; k < nd->n_out; k++)
            x->batched[nd->out[k]] = b;
        x->fold[n] = -1;
    }
}

static const slim_registry *g_reg(const xp_ex *x)
{
    return x->g->reg;
}

/* Every needed node whose op has no exporter, listed in one message. */
static slim_status check_ops(xp_ex *x)
{
    char list[700] = "";
    size_t len = 0;
    int n_bad = 0;
    for (int n = 0; n < x->g->n_nodes; n++) {
        const slim__node *nd = &x->g->nodes[n];
        if (!x->need[n] || xp_op_emitter(g_reg(x), nd->d->name))
            continue;
        if (n_bad++ < 8 && len < sizeof list)
            len += (size_t)snprintf(list + len, sizeof list - len, "%s%s '%s'",
                                    n_bad > 1 ? ", " : "", nd->d->name, nd->name);
    }
    if (!n_bad)
        return SLIM_OK;
    char more[48] = "";
    if (n_bad > 8)
        snprintf(more, sizeof more, " and %d more", n_bad - 8);
    return xp_fail(x, SLIM_EUNSUPPORTED,
                   "%d node%s ha%s no ONNX counterpart: %s%s (an op plugin can declare the ONNX "
                   "op type its op implements: see \"Writing an op plugin\" in README.md)",
                   n_bad, n_bad > 1 ? "s" : "", n_bad > 1 ? "ve" : "s", list, more);
}

static slim_status build(xp_ex *x, Onnx__ModelProto *m)
{
    const slim_graph *g = x->g;
    const slim__onnx_export_opts *o = x->o;
    x->opset = o->opset ? o->opset : SLIM__ONNX_EXPORT_MIN_OPSET;
    if (x->opset < SLIM__ONNX_EXPORT_MIN_OPSET || x->opset > SLIM__ONNX_EXPORT_MAX_OPSET)
        return xp_fail(x, SLIM_EINVAL, "opset %d: slim writes opsets %d to %d", x->opset,
                       SLIM__ONNX_EXPORT_MIN_OPSET, SLIM__ONNX_EXPORT_MAX_OPSET);
    size_t nt = (size_t)g->n_tensors, nn = (size_t)(g->n_nodes ? g->n_nodes : 1);
    x->val = calloc(nt, sizeof *x->val);
    x->out_name = calloc(nt, sizeof *x->out_name);
    x->batched = calloc(nt, sizeof *x->batched);
    x->uses = calloc(nt, sizeof *x->uses);
    x->need = calloc(nn, sizeof *x->need);
    x->fold = calloc(nn, sizeof *x->fold);
    if (!x->val || !x->out_name || !x->batched || !x->uses || !x->need || !x->fold)
        return xp_fail(x, SLIM_ENOMEM, "out of memory");

    const char *in_name = o->input ? o->input : "images";
    slim_tid input, outs[4];
    int n_out = 0;
    if (slim_graph_find(g, in_name, &input) || g->tensors[input].kind != SLIM__T_INPUT)
        return xp_fail(x, SLIM_ENOTFOUND, "the graph has no input '%s'", in_name);
    const slim_shape *is = xp_shape(x, input);
    if (g->tensors[input].d.dtype != SLIM_F32 || is->rank < 1)
        return xp_fail(x, SLIM_ETYPE, "the input '%s' is not an f32 batch", in_name);
    if (o->input_nchw && is->rank != 4)
        return xp_fail(x, SLIM_ESHAPE, "an NCHW input needs a 4-D input; '%s' has rank %d", in_name,
                       is->rank);
    x->batch = is->dim[0];
    for (; n_out < 4 && o->outputs[n_out]; n_out++) {
        if (slim_graph_find(g, o->outputs[n_out], &outs[n_out]))
            return xp_fail(x, SLIM_ENOTFOUND, "the graph has no tensor '%s' to export",
                           o->outputs[n_out]);
        const char *nm = o->output_names[n_out] ? o->output_names[n_out] : o->outputs[n_out];
        if (x->out_name[outs[n_out]] || slim__names_get(&x->names, nm) >= 0)
            return xp_fail(x, SLIM_EINVAL, "'%s' is exported twice", nm);
        if (!(x->out_name[outs[n_out]] = xp_name(x, nm, NULL)))
            return x->st;
    }
    if (!n_out)
        return xp_fail(x, SLIM_EINVAL, "no output to export");
    plan(x, outs, n_out, input);
    if (x->st || check_ops(x))
        return x->st;
    for (int n = 0; n < g->n_nodes; n++)
        if (x->need[n] && !strcmp(g->nodes[n].d->name, "batch_norm") && o->fold_batch_norm)
            xp_plan_fold(x, n);

    /* the input */
    static const int nchw[4] = {0, 3, 1, 2};
    bool dyn = o->dynamic_batch;
    if (!xp_name(x, in_name, NULL))
        return x->st;
    x->val[input][o->input_nchw ? XL_CF : XL_SAME] = in_name;
    Onnx__ValueInfoProto *vin = value_info(x, in_name, is, o->input_nchw ? nchw : NULL, dyn);

    for (int n = 0; n < g->n_nodes && !x->st; n++) {
        if (!x->need[n] || x->fold[n] == -2)
            continue;
        x->at = &g->nodes[n];
        xp_op_emitter(g_reg(x), g->nodes[n].d->name)(x, n);
    }
    x->at = NULL;

    Onnx__ValueInfoProto **vout = xp_alloc(x, (size_t)n_out * sizeof *vout);
    for (int i = 0; vout && i < n_out; i++) {
        slim_tid t = outs[i];
        const char *v = xp_get(x, t, XL_SAME);
        const char *want = x->out_name[t];
        if (v && strcmp(v, want) != 0) /* computed under another name (an input, an alias) */
            xp_node1(x, "Identity", want, &v, 1, want);
        vout[i] = value_info(x, want, xp_shape(x, t), NULL, dyn && x->batched[t]);
    }
    if (x->st)
        return x->st;
    if (x->init_bytes > SLIM__OX_MAX_FILE - ((size_t)64 << 20))
        return xp_fail(x, SLIM_EUNSUPPORTED,
                       "the weights take %zu MB; an ONNX file holds at most 2 GB (external data "
                       "files are not written)",
                       x->init_bytes >> 20);

    Onnx__GraphProto *gp = xp_alloc(x, sizeof *gp);
    Onnx__OperatorSetIdProto *os = xp_alloc(x, sizeof *os);
    Onnx__OperatorSetIdProto **osl = xp_alloc(x, (size_t)(1 + x->n_domains) * sizeof *osl);
    Onnx__ValueInfoProto **vinl = xp_alloc(x, sizeof *vinl);
    if (!gp || !os || !osl || !vinl || !vin)
        return x->st ? x->st : xp_fail(x, SLIM_ENOMEM, "out of memory");
    onnx__graph_proto__init(gp);
    gp->name = xp_strdup(x, o->graph_name ? o->graph_name : "slim");
    gp->node = x->node;
    gp->n_node = x->n_node;
    gp->initializer = x->init;
    gp->n_initializer = x->n_init;
    vinl[0] = vin;
    gp->input = vinl;
    gp->n_input = 1;
    gp->output = vout;
    gp->n_output = (size_t)n_out;
    onnx__operator_set_id_proto__init(os);
    os->domain = xp_strdup(x, "");
    os->has_version = true;
    os->version = x->opset;
    osl[0] = os;
    for (int i = 0; i < x->n_domains; i++) {
        Onnx__OperatorSetIdProto *d = xp_alloc(x, sizeof *d);
        if (!d)
            return x->st;
        onnx__operator_set_id_proto__init(d);
        d->domain = (char *)x->domains[i];
        d->has_version = true;
        d->version = 1;
        osl[1 + i] = d;
    }
    m->has_ir_version = true;
    m->ir_version = ir_version(x->opset);
    m->opset_import = osl;
    m->n_opset_import = (size_t)(1 + x->n_domains);
    m->producer_name = xp_strdup(x, "slim");
    m->producer_version = xp_strdup(x, slim_version());
    if (o->doc)
        m->doc_string = xp_strdup(x, o->doc);
    m->graph = gp;
    return x->st;
}

slim_status slim__onnx_export(const slim_graph *g, const slim__onnx_export_opts *o, uint8_t **buf,
                              size_t *len, slim_error *err)
{
    *buf = NULL;
    *len = 0;
    xp_ex x = {.g = g, .o = o, .err = err};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    if (build(&x, &m) == SLIM_OK) {
        size_t n = onnx__model_proto__get_packed_size(&m);
        *buf = malloc(n ? n : 1);
        if (*buf)
            *len = onnx__model_proto__pack(&m, *buf);
        else
            xp_fail(&x, SLIM_ENOMEM, "out of memory (%zu bytes for the model)", n);
    }
    slim_status st = x.st;
    ex_free(&x);
    return st;
}

typedef struct file_sink {
    ProtobufCBuffer base;
    FILE *f;
    bool failed;
} file_sink;

static void sink_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
    file_sink *s = (file_sink *)b;
    if (!s->failed && len && fwrite(data, 1, len, s->f) != len)
        s->failed = true;
}

slim_status slim__onnx_export_file(const slim_graph *g, const slim__onnx_export_opts *o,
                                   const char *path, slim_error *err)
{
    xp_ex x = {.g = g, .o = o, .err = err};
    Onnx__ModelProto m = ONNX__MODEL_PROTO__INIT;
    if (build(&x, &m) == SLIM_OK) {
        file_sink s = {.base = {.append = sink_append}, .f = fopen(path, "wb")};
        if (!s.f) {
            xp_fail(&x, SLIM_EIO, "cannot create %s: %s", path, strerror(errno));
        } else {
            onnx__model_proto__pack_to_buffer(&m, &s.base);
            if (fclose(s.f) != 0 || s.failed) {
                xp_fail(&x, SLIM_EIO, "cannot write %s (disk full?)", path);
                remove(path);
            }
        }
    }
    slim_status st = x.st;
    ex_free(&x);
    return st;
}
