/*
 * interop/onnx_fold.c - what the importer computes on the host, and the
 * exporters' idioms it recognizes.
 *
 * Folding: exporters compute shapes in the graph (Shape -> Gather ->
 * Unsqueeze -> Concat -> Reshape, Cast, ConstantOfShape, arithmetic on the
 * results). With every shape known when importing, such a node whose inputs
 * are all constants is evaluated here, and only its result (a host value)
 * reaches the ops that need one. Shape and Size need only their input's dims.
 *
 * Idioms: a few functions reach ONNX as several nodes; each is mapped to
 * slim's op when the nodes match exactly (structure here for the scan,
 * constants again when mapping):
 *   SiLU       Sigmoid(x) -> Mul(x, .)                              silu
 *   HardSwish  HardSigmoid(x, 1/6, 1/2) -> Mul(x, .)                hard_swish
 *   GELU       Div(x, sqrt 2) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5)   gelu
 *   LayerNorm  ReduceMean(x, -1) -> Sub(x, .) -> Pow(., 2) -> ReduceMean(-1)
 *              -> Add(., eps) -> Sqrt -> Div(sub, .) [-> Mul(., w) -> Add(., b)]
 *                                                                    layer_norm
 */
#include "interop/onnx_build.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- folding ------------------------------------------------------------------------ */

/* What folding may allocate: shapes and small constants in real models; a
 * bound for hostile ones (one tensor, and all of them together). */
#define FOLD_MAX_ELEMS ((int64_t)1 << 24)
#define FOLD_BUDGET ((int64_t)1 << 26)

static bool fold_alloc(ox_builder *b, slim__ox_tensor *t, bool is_float, int rank,
                       const int64_t *dim)
{
    memset(t, 0, sizeof *t);
    int64_t n = slim__ox_numel(rank, dim);
    if (n < 0 || n > FOLD_MAX_ELEMS || b->folded + n > FOLD_BUDGET) {
        ox_unsup(b,
                 "a constant of %lld elements to compute before the run (at most %lld, %lld "
                 "in all)",
                 (long long)n, (long long)FOLD_MAX_ELEMS, (long long)FOLD_BUDGET);
        return false;
    }
    if (!slim__ox_tensor_alloc(t, is_float, rank, dim)) {
        ox_oom(b);
        return false;
    }
    b->folded += n;
    return true;
}

static slim_status def_ints(ox_builder *b, const char *name, const int64_t *v, int rank,
                            const int64_t *dim)
{
    slim__ox_tensor t;
    if (!fold_alloc(b, &t, false, rank, dim))
        return b->err->code;
    memcpy(t.i, v, (size_t)t.numel * sizeof *v);
    slim_status st = ox_def_host(b, name, &t, false, false);
    slim__ox_tensor_fini(&t);
    return st;
}

/* A double as int64, saturated (NaN: 0): no undefined conversion. */
static int64_t to_i64(double x)
{
    if (!(x == x))
        return 0;
    if (x >= 9.2e18)
        return INT64_MAX;
    if (x <= -9.2e18)
        return INT64_MIN;
    return (int64_t)x;
}

static double elem(const slim__ox_tensor *t, int64_t k)
{
    return t->f ? (double)t->f[k] : (double)t->i[k];
}

/* Numpy broadcasting of a and c: the output o (allocated with o_float data). */
static slim_status broadcast2(ox_builder *b, const slim__ox_tensor *a, const slim__ox_tensor *c,
                              bool o_float, slim__ox_tensor *o)
{
    int r = a->rank > c->rank ? a->rank : c->rank;
    int64_t d[OX_MAXD];
    for (int i = 0; i < r; i++) {
        int x = i - (r - a->rank), y = i - (r - c->rank);
        int64_t da = x >= 0 ? a->dim[x] : 1, dc = y >= 0 ? c->dim[y] : 1;
        if (da != dc && da != 1 && dc != 1)
            return ox_fail(b, SLIM_ESHAPE, "operands of dims that do not broadcast");
        d[i] = da == 1 ? dc : da;
    }
    return fold_alloc(b, o, o_float, r, d) ? SLIM_OK : b->err->code;
}

/* The flat indices in a and c of the output element at multi-index idx. */
static void bcast_at(const slim__ox_tensor *a, const slim__ox_tensor *c, int r, const int64_t *idx,
                     int64_t *pa, int64_t *pc)
{
    *pa = *pc = 0;
    for (int i = 0; i < r; i++) {
        int x = i - (r - a->rank), y = i - (r - c->rank);
        if (x >= 0)
            *pa = *pa * a->dim[x] + (a->dim[x] == 1 ? 0 : idx[i]);
        if (y >= 0)
            *pc = *pc * c->dim[y] + (c->dim[y] == 1 ? 0 : idx[i]);
    }
}

static slim_status fold_binary(ox_builder *b, const Onnx__NodeProto *n, const ox_value *a,
                               const ox_value *c)
{
    const char *op = n->op_type;
    bool fl = a->host.f || c->host.f;
    if ((a->host.f != NULL) != (c->host.f != NULL) && strcmp(op, "Pow") != 0)
        return ox_fail(b, SLIM_EINVAL, "operands of different types");
    bool cmp = strcmp(op, "Equal") == 0, of = fl && !cmp;
    slim__ox_tensor o;
    slim_status st = broadcast2(b, &a->host, &c->host, of, &o);
    if (st != SLIM_OK)
        return st;
    int64_t idx[OX_MAXD] = {0};
    for (int64_t k = 0; k < o.numel; k++) {
        int64_t pa, pc;
        bcast_at(&a->host, &c->host, o.rank, idx, &pa, &pc);
        for (int i = o.rank - 1; i >= 0; i--) {
            if (++idx[i] < o.dim[i])
                break;
            idx[i] = 0;
        }
        double x = elem(&a->host, pa), y = elem(&c->host, pc), r;
        switch (op[0]) {
        case 'A': r = x + y; break;
        case 'S': r = x - y; break;
        case 'M': r = x * y; break;
        case 'P': r = pow(x, y); break;
        case 'E': r = x == y; break;
        default: /* Div */
            if (!fl && y == 0) {
                slim__ox_tensor_fini(&o);
                return ox_fail(b, SLIM_EINVAL, "integer division by zero");
            }
            if (!fl) {
                int64_t xi = to_i64(x), yi = to_i64(y);
                r = xi == INT64_MIN && yi == -1 ? 9.3e18 : (double)(xi / yi);
            } else {
                r = x / y;
            }
        }
        if (of)
            o.f[k] = (float)r;
        else
            o.i[k] = to_i64(r);
    }
    st = ox_def_host(b, n->output[0], &o, false, false);
    slim__ox_tensor_fini(&o);
    return st;
}

static slim_status fold_gather(ox_builder *b, const Onnx__NodeProto *n, const ox_value *data,
                               const ox_value *ind)
{
    if (!ind->host.i)
        return ox_fail(b, SLIM_EINVAL, "indices are not integers");
    int r = data->rank, axis = ox_norm_axis(slim__ox_attr_int(n, "axis", 0), r);
    if (axis < 0)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", r);
    if (r + ind->rank - 1 > OX_MAXD)
        return ox_unsup(b, "a result of rank %d", r + ind->rank - 1);
    int64_t d[OX_MAXD], q = 0, outer = 1, inner = 1, A = data->dim[axis];
    for (int i = 0; i < axis; i++)
        outer *= (d[q++] = data->dim[i]);
    for (int i = 0; i < ind->rank; i++)
        d[q++] = ind->dim[i];
    for (int i = axis + 1; i < r; i++)
        inner *= (d[q++] = data->dim[i]);
    slim__ox_tensor o;
    if (!fold_alloc(b, &o, data->host.f != NULL, (int)q, d))
        return b->err->code;
    int64_t m = ind->host.numel, k = 0;
    for (int64_t i = 0; i < outer; i++)
        for (int64_t j = 0; j < m; j++) {
            int64_t at = ind->host.i[j];
            if (at < 0)
                at += A;
            if (at < 0 || at >= A) {
                slim__ox_tensor_fini(&o);
                return ox_fail(b, SLIM_EINVAL, "index %lld out of range [0, %lld)",
                               (long long)ind->host.i[j], (long long)A);
            }
            for (int64_t s = 0; s < inner; s++, k++) {
                int64_t src = (i * A + at) * inner + s;
                if (o.f)
                    o.f[k] = data->host.f[src];
                else
                    o.i[k] = data->host.i[src];
            }
        }
    o.elem = data->host.elem;
    slim_status st = ox_def_host(b, n->output[0], &o, false, false);
    slim__ox_tensor_fini(&o);
    return st;
}

static slim_status fold_slice(ox_builder *b, const Onnx__NodeProto *n, const ox_value *v)
{
    int vi = (int)(v - b->vals), r = v->rank;
    int64_t lo[OX_MAXD], step[OX_MAXD], d[OX_MAXD];
    slim_status st = ox_slice_window(b, n, vi, lo, step, d);
    if (st != SLIM_OK)
        return st;
    v = &b->vals[vi];
    slim__ox_tensor o;
    if (!fold_alloc(b, &o, v->host.f != NULL, r, d))
        return b->err->code;
    int64_t idx[OX_MAXD] = {0};
    for (int64_t k = 0; k < o.numel; k++) {
        int64_t src = 0;
        for (int i = 0; i < r; i++)
            src = src * v->dim[i] + lo[i] + idx[i] * step[i];
        if (o.f)
            o.f[k] = v->host.f[src];
        else
            o.i[k] = v->host.i[src];
        for (int i = r - 1; i >= 0; i--) {
            if (++idx[i] < d[i])
                break;
            idx[i] = 0;
        }
    }
    st = ox_def_host(b, n->output[0], &o, false, false);
    slim__ox_tensor_fini(&o);
    return st;
}

static slim_status fold_concat(ox_builder *b, const Onnx__NodeProto *n)
{
    ox_value *v0 = ox_arg(b, n, 0);
    if (!v0)
        return b->err->code;
    int r = v0->rank, axis = ox_norm_axis(slim__ox_attr_int(n, "axis", 0), r);
    if (axis < 0)
        return ox_fail(b, SLIM_EINVAL, "axis out of range for rank %d", r);
    int64_t d[OX_MAXD];
    memcpy(d, v0->dim, sizeof d);
    d[axis] = 0;
    bool fl = v0->host.f != NULL;
    for (size_t i = 0; i < n->n_input; i++) {
        ox_value *v = ox_arg(b, n, i);
        if (!v)
            return b->err->code;
        if (v->rank != r || (v->host.f != NULL) != fl)
            return ox_fail(b, SLIM_EINVAL, "inputs of different ranks or types");
        for (int k = 0; k < r; k++)
            if (k != axis && v->dim[k] != d[k])
                return ox_fail(b, SLIM_ESHAPE, "input %zu does not match off the axis", i);
        d[axis] += v->dim[axis];
    }
    slim__ox_tensor o;
    if (!fold_alloc(b, &o, fl, r, d))
        return b->err->code;
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++)
        outer *= d[k];
    for (int k = axis + 1; k < r; k++)
        inner *= d[k];
    int64_t off = 0;
    for (size_t i = 0; i < n->n_input; i++) {
        const ox_value *v = ox_find(b, n->input[i]);
        int64_t chunk = v->dim[axis] * inner;
        for (int64_t j = 0; j < outer; j++)
            for (int64_t s = 0; s < chunk; s++) {
                int64_t dst = j * d[axis] * inner + off + s, src = j * chunk + s;
                if (fl)
                    o.f[dst] = v->host.f[src];
                else
                    o.i[dst] = v->host.i[src];
            }
        off += chunk;
    }
    slim_status st = ox_def_host(b, n->output[0], &o, false, false);
    slim__ox_tensor_fini(&o);
    return st;
}

slim_status ox_fold(ox_builder *b, const Onnx__NodeProto *n)
{
    const char *op = n->op_type;
    if (!slim__ox_has_output(n, 0) || n->n_input > 64)
        return SLIM_ENOTFOUND;
    /* Shape and Size only need their input's dims */
    if (strcmp(op, "Shape") == 0 || strcmp(op, "Size") == 0) {
        ox_value *v = ox_arg(b, n, 0);
        if (!v)
            return b->err->code;
        if (op[1] == 'i') {
            int64_t s = slim__ox_numel(v->rank, v->dim);
            return def_ints(b, n->output[0], &s, 0, NULL);
        }
        int r = v->rank;
        int64_t lo = slim__ox_attr_int(n, "start", 0), hi = slim__ox_attr_int(n, "end", r);
        lo = lo < 0 ? lo + r : lo;
        hi = hi < 0 ? hi + r : hi;
        lo = lo < 0 ? 0 : lo > r ? r : lo;
        hi = hi < 0 ? 0 : hi > r ? r : hi;
        int64_t cnt = hi > lo ? hi - lo : 0;
        return def_ints(b, n->output[0], v->dim + lo, 1, &cnt);
    }
    for (size_t i = 0; i < n->n_input; i++) {
        if (!slim__ox_has_input(n, i))
            continue;
        ox_value *v = ox_find(b, n->input[i]);
        if (!v || !ox_is_const(v))
            return SLIM_ENOTFOUND;
    }
    if (n->n_input == 0)
        return SLIM_ENOTFOUND;
    ox_value *a = ox_arg(b, n, 0);
    if (!a)
        return b->err->code;
    if (!strcmp(op, "Add") || !strcmp(op, "Sub") || !strcmp(op, "Mul") || !strcmp(op, "Div") ||
        !strcmp(op, "Pow") || !strcmp(op, "Equal")) {
        ox_value *c = ox_arg(b, n, 1);
        return c ? fold_binary(b, n, a, c) : b->err->code;
    }
    if (!strcmp(op, "Gather")) {
        ox_value *ind = ox_arg(b, n, 1);
        return ind ? fold_gather(b, n, a, ind) : b->err->code;
    }
    if (!strcmp(op, "Slice"))
        return fold_slice(b, n, a);
    if (!strcmp(op, "Concat"))
        return fold_concat(b, n);
    if (!strcmp(op, "Cast")) {
        int64_t to = slim__ox_attr_int(n, "to", 0);
        slim__ox_tensor o;
        bool fl = slim__ox_elem_is_float((int)to);
        if (!fold_alloc(b, &o, fl, a->rank, a->dim))
            return b->err->code;
        for (int64_t k = 0; k < o.numel; k++) {
            double x = elem(&a->host, k);
            if (fl)
                o.f[k] = (float)x;
            else
                o.i[k] = to == ONNX__TENSOR_PROTO__DATA_TYPE__BOOL ? x != 0 : to_i64(x);
        }
        o.elem = (int)to;
        slim_status st = ox_def_host(b, n->output[0], &o, false, false);
        slim__ox_tensor_fini(&o);
        return st;
    }
    if (!strcmp(op, "ConstantOfShape")) {
        if (!a->host.i || a->rank != 1 || a->host.numel > OX_MAXD)
            return ox_fail(b, SLIM_EINVAL, "the shape must be 1-D integers (at most %d)", OX_MAXD);
        const Onnx__AttributeProto *va = slim__ox_attr(n, "value");
        slim__ox_tensor val = {0};
        bool fl = true;
        double x = 0;
        if (va && va->t) {
            slim_status st =
                slim__ox_tensor_from_proto(va->t, "ConstantOfShape value", &val, b->err);
            if (st != SLIM_OK)
                return st;
            if (val.numel != 1) {
                slim__ox_tensor_fini(&val);
                return ox_fail(b, SLIM_EINVAL, "the value must hold one element");
            }
            fl = val.f != NULL;
            x = elem(&val, 0);
            slim__ox_tensor_fini(&val);
        }
        slim__ox_tensor o;
        if (slim__ox_numel((int)a->host.numel, a->host.i) < 0 ||
            slim__ox_numel((int)a->host.numel, a->host.i) > 1 << 24)
            return ox_unsup(b, "a constant of more than 2^24 elements");
        if (!fold_alloc(b, &o, fl, (int)a->host.numel, a->host.i))
            return b->err->code;
        for (int64_t k = 0; k < o.numel; k++) {
            if (fl)
                o.f[k] = (float)x;
            else
                o.i[k] = to_i64(x);
        }
        slim_status st = ox_def_host(b, n->output[0], &o, false, false);
        slim__ox_tensor_fini(&o);
        return st;
    }
    if (!strcmp(op, "Range")) {
        ox_value *lim = ox_arg(b, n, 1), *dl = ox_arg(b, n, 2);
        if (!lim || !dl)
            return b->err->code;
        if (a->host.numel != 1 || lim->host.numel != 1 || dl->host.numel != 1)
            return ox_fail(b, SLIM_EINVAL, "start, limit and delta must be scalars");
        double s0 = elem(&a->host, 0), l0 = elem(&lim->host, 0), d0 = elem(&dl->host, 0);
        double cnt = d0 != 0 ? ceil((l0 - s0) / d0) : -1;
        if (!(cnt >= 0 && cnt <= 1 << 24))
            return ox_fail(b, SLIM_EINVAL, "a range of %g elements", cnt);
        int64_t c = (int64_t)cnt;
        slim__ox_tensor o;
        if (!fold_alloc(b, &o, a->host.f != NULL, 1, &c))
            return b->err->code;
        for (int64_t k = 0; k < c; k++) {
            if (o.f)
                o.f[k] = (float)(s0 + (double)k * d0);
            else
                o.i[k] = to_i64(s0 + (double)k * d0);
        }
        slim_status st = ox_def_host(b, n->output[0], &o, false, false);
        slim__ox_tensor_fini(&o);
        return st;
    }
    if (!strcmp(op, "Neg") || !strcmp(op, "Floor") || !strcmp(op, "Ceil") || !strcmp(op, "Sqrt")) {
        slim__ox_tensor o;
        if (!slim__ox_tensor_copy(&o, &a->host))
            return ox_oom(b);
        for (int64_t k = 0; k < o.numel; k++) {
            double x = elem(&o, k);
            double r = op[0] == 'N'   ? -x
                       : op[0] == 'F' ? floor(x)
                       : op[1] == 'e' ? ceil(x)
                                      : sqrt(x);
            if (o.f)
                o.f[k] = (float)r;
            else
                o.i[k] = to_i64(r);
        }
        slim_status st = ox_def_host(b, n->output[0], &o, false, false);
        slim__ox_tensor_fini(&o);
        return st;
    }
    if (!strcmp(op, "Where")) {
        ox_value *x = ox_arg(b, n, 1), *y = ox_arg(b, n, 2);
        if (!x || !y)
            return b->err->code;
        if (!a->host.i || x->host.numel != a->host.numel || y->host.numel != a->host.numel ||
            (x->host.f != NULL) != (y->host.f != NULL))
            return ox_unsup(b, "Where of operands that need broadcasting");
        slim__ox_tensor o;
        if (!slim__ox_tensor_copy(&o, &x->host))
            return ox_oom(b);
        for (int64_t k = 0; k < o.numel; k++) {
            if (!a->host.i[k]) {
                if (o.f)
                    o.f[k] = y->host.f[k];
                else
                    o.i[k] = y->host.i[k];
            }
        }
        slim_status st = ox_def_host(b, n->output[0], &o, false, false);
        slim__ox_tensor_fini(&o);
        return st;
    }
    if (!strcmp(op, "Expand")) {
        ox_value *s = ox_arg(b, n, 1);
        if (!s)
            return b->err->code;
        if (!s->host.i || s->rank != 1 || s->host.numel > OX_MAXD)
            return ox_fail(b, SLIM_EINVAL, "the shape must be 1-D integers");
        slim__ox_tensor ones;
        if (!fold_alloc(b, &ones, a->host.f != NULL, (int)s->host.numel, s->host.i))
            return b->err->code;
        for (int64_t k = 0; k < ones.numel; k++) {
            if (ones.f)
                ones.f[k] = 1;
            else
                ones.i[k] = 1;
        }
        ox_value tmp = {.kind = OX_HOST, .host = ones, .rank = ones.rank};
        memcpy(tmp.dim, ones.dim, sizeof tmp.dim);
        static Onnx__NodeProto mul;
        mul = *n;
        mul.op_type = "Mul";
        slim_status st = fold_binary(b, &mul, a, &tmp);
        slim__ox_tensor_fini(&ones);
        return st;
    }
    /* reshapes of constants fold in their mappers */
    return SLIM_ENOTFOUND;
}

/* ---- idioms ------------------------------------------------------------------------- */

static const Onnx__NodeProto *node_at(ox_builder *b, int k)
{
    return k >= 0 && (size_t)k < b->model->graph->n_node ? b->model->graph->node[k] : NULL;
}

/* The nodes reading value name, up to max; the count (or -1 for a graph output). */
static int consumers(ox_builder *b, const char *name, int *out, int max)
{
    const ox_use *u = ox_uses(b, name);
    if (!u)
        return 0;
    if (u->graph_output)
        return -1;
    const Onnx__GraphProto *g = b->model->graph;
    int cnt = 0;
    for (size_t k = (size_t)(u->first_consumer >= 0 ? u->first_consumer : 0);
         k < g->n_node && cnt < u->n_consumers; k++) {
        const Onnx__NodeProto *n = g->node[k];
        for (size_t i = 0; i < n->n_input; i++)
            if (strcmp(n->input[i], name) == 0) {
                if (cnt < max)
                    out[cnt] = (int)k;
                cnt++;
            }
    }
    return cnt;
}

static bool is(const Onnx__NodeProto *n, const char *op, size_t n_in)
{
    return n && strcmp(n->op_type, op) == 0 && n->n_input == n_in && n->n_output >= 1 &&
           n->output[0][0] && (!n->domain || !n->domain[0] || !strcmp(n->domain, "ai.onnx"));
}

/* The sole consumer of node k's output 0, if it is op with n_in inputs. */
static int next(ox_builder *b, int k, const char *op, size_t n_in)
{
    const Onnx__NodeProto *n = node_at(b, k);
    int c = n ? ox_sole_consumer(b, n->output[0]) : -1;
    return is(node_at(b, c), op, n_in) ? c : -1;
}

/* The input of node c that is not name (c reads name and one other value). */
static const char *other_input(const Onnx__NodeProto *c, const char *name)
{
    if (c->n_input != 2)
        return NULL;
    if (strcmp(c->input[0], name) == 0)
        return c->input[1];
    if (strcmp(c->input[1], name) == 0)
        return c->input[0];
    return NULL;
}

/* A scalar constant's value, when known (mapping time); NAN otherwise. A
 * Constant node the exporter placed after the idiom's first node is mapped
 * here, early. */
static double const_value(ox_builder *b, const char *name)
{
    ox_value *v = name ? ox_find(b, name) : NULL;
    const ox_use *u = name && !v ? ox_uses(b, name) : NULL;
    if (u && u->producer >= 0 && !b->done[u->producer]) {
        const Onnx__NodeProto *c = node_at(b, u->producer);
        if (c && !strcmp(c->op_type, "Constant") && c->n_input == 0) {
            const Onnx__NodeProto *keep = b->node;
            int keep_k = b->node_index;
            b->node = c;
            b->node_index = u->producer;
            slim_status st = ox_map_node(b, c);
            b->node = keep;
            b->node_index = keep_k;
            if (st != SLIM_OK)
                return NAN;
            b->done[u->producer] = true;
            v = ox_find(b, name);
        }
    }
    if (!v || !ox_is_const(v) || v->host.numel != 1)
        return NAN;
    return elem(&v->host, 0);
}

static bool near(double x, double want)
{
    return fabs(x - want) <= 1e-5 * fabs(want);
}

static int match_gate(ox_builder *b, int k, int *nodes, const char *gate)
{
    const Onnx__NodeProto *s = node_at(b, k);
    if (!is(s, gate, 1))
        return 0;
    int m = next(b, k, "Mul", 2);
    const char *o = m >= 0 ? other_input(node_at(b, m), s->output[0]) : NULL;
    if (!o || strcmp(o, s->input[0]) != 0)
        return 0;
    nodes[0] = k;
    nodes[1] = m;
    return 2;
}

static int match_gelu(ox_builder *b, int k, int *nodes)
{
    const Onnx__NodeProto *d = node_at(b, k);
    if (!is(d, "Div", 2))
        return 0;
    int e = next(b, k, "Erf", 1), a = next(b, e, "Add", 2), m1 = next(b, a, "Mul", 2),
        m2 = next(b, m1, "Mul", 2);
    if (m2 < 0)
        return 0;
    const char *x = d->input[0];
    const char *o1 = other_input(node_at(b, m1), node_at(b, a)->output[0]);
    if (!o1 || strcmp(o1, x) != 0 || !other_input(node_at(b, a), node_at(b, e)->output[0]) ||
        !other_input(node_at(b, m2), node_at(b, m1)->output[0]))
        return 0;
    int list[5] = {k, e, a, m1, m2};
    memcpy(nodes, list, sizeof list);
    return 5;
}

static bool last_axis_mean(const Onnx__NodeProto *n, int64_t rank_hint)
{
    int64_t axes[2];
    int na = slim__ox_attr_ints(n, "axes", axes, 2);
    (void)rank_hint;
    return na == 1 && axes[0] == -1 && slim__ox_attr_int(n, "keepdims", 1) == 1;
}

static int match_layernorm(ox_builder *b, int k, int *nodes)
{
    const Onnx__NodeProto *rm = node_at(b, k);
    if (!is(rm, "ReduceMean", 1) || !last_axis_mean(rm, 0))
        return 0;
    const char *x = rm->input[0];
    int sub = next(b, k, "Sub", 2);
    if (sub < 0 || strcmp(node_at(b, sub)->input[0], x) != 0)
        return 0;
    int c[2];
    if (consumers(b, node_at(b, sub)->output[0], c, 2) != 2)
        return 0;
    int pw = is(node_at(b, c[0]), "Pow", 2) ? c[0] : c[1], dv = pw == c[0] ? c[1] : c[0];
    if (!is(node_at(b, pw), "Pow", 2) || !is(node_at(b, dv), "Div", 2) ||
        strcmp(node_at(b, pw)->input[0], node_at(b, sub)->output[0]) != 0 ||
        strcmp(node_at(b, dv)->input[0], node_at(b, sub)->output[0]) != 0)
        return 0;
    int rm2 = next(b, pw, "ReduceMean", 1), ad = next(b, rm2, "Add", 2),
        sq = next(b, ad, "Sqrt", 1), dv2 = next(b, sq, "Div", 2);
    if (dv2 != dv || !last_axis_mean(node_at(b, rm2), 0) ||
        strcmp(node_at(b, dv)->input[1], node_at(b, sq)->output[0]) != 0)
        return 0;
    int cnt = 0;
    int list[9] = {k, sub, pw, rm2, ad, sq, dv};
    cnt = 7;
    int mu = next(b, dv, "Mul", 2);
    if (mu >= 0) {
        list[cnt++] = mu;
        int a2 = next(b, mu, "Add", 2);
        if (a2 >= 0)
            list[cnt++] = a2;
    }
    memcpy(nodes, list, (size_t)cnt * sizeof *list);
    return cnt;
}

int slim__ox_idiom_match(ox_builder *b, int k, int *nodes, int max)
{
    if (max < 9)
        return 0;
    int cnt = match_gate(b, k, nodes, "Sigmoid");
    if (!cnt)
        cnt = match_gate(b, k, nodes, "HardSigmoid");
    if (!cnt)
        cnt = match_gelu(b, k, nodes);
    if (!cnt)
        cnt = match_layernorm(b, k, nodes);
    return cnt;
}

/* A 1-D constant of C floats (a layer norm's scale or bias), or NULL. */
static ox_value *vector_const(ox_builder *b, const char *name, int64_t C)
{
    ox_value *v = ox_find(b, name);
    if (!v || v->kind != OX_HOST || !v->host.f || v->host.numel != C)
        return NULL;
    for (int i = 0; i + 1 < v->rank; i++)
        if (v->dim[i] != 1)
            return NULL;
    return v;
}

slim_status slim__ox_idiom(ox_builder *b, int k)
{
    int nodes[16];
    int cnt = slim__ox_idiom_match(b, k, nodes, 16);
    if (!cnt)
        return SLIM_ENOTFOUND;
    const Onnx__NodeProto *first = node_at(b, k), *last = node_at(b, nodes[cnt - 1]);
    ox_value *x = ox_find(b, first->input[0]);
    if (!x || x->kind != OX_COMPUTED)
        return SLIM_ENOTFOUND; /* on constants or fed values: node by node */
    /* const_value may fold constants into new values, moving the table:
     * x is refetched by its index after it */
    int xi = (int)(x - b->vals);
    slim_status st = SLIM_ENOTFOUND;
    if (!strcmp(first->op_type, "Sigmoid")) {
        st = ox_unary_value(b, x, "silu", NULL, 0, last->output[0]);
    } else if (!strcmp(first->op_type, "HardSigmoid")) {
        if (near(slim__ox_attr_float(first, "alpha", 0.2f), 1.0 / 6) &&
            near(slim__ox_attr_float(first, "beta", 0.5f), 0.5))
            st = ox_unary_value(b, x, "hard_swish", NULL, 0, last->output[0]);
    } else if (!strcmp(first->op_type, "Div")) {
        const Onnx__NodeProto *add = node_at(b, nodes[2]), *m2 = node_at(b, nodes[4]);
        const char *one = other_input(add, node_at(b, nodes[1])->output[0]);
        const char *half = other_input(m2, node_at(b, nodes[3])->output[0]);
        if (near(const_value(b, first->input[1]), sqrt(2.0)) && near(const_value(b, one), 1) &&
            near(const_value(b, half), 0.5))
            st = ox_unary_value(b, &b->vals[xi], "gelu", NULL, 0, last->output[0]);
    } else {
        /* layer norm: eps from the Add, scale and bias from the optional Mul / Add */
        int64_t C = x->dim[x->rank - 1];
        const Onnx__NodeProto *pw = node_at(b, nodes[2]), *ad = node_at(b, nodes[4]);
        double two = const_value(b, pw->input[1]);
        const char *eps_name = other_input(ad, node_at(b, nodes[3])->output[0]);
        double eps = eps_name ? const_value(b, eps_name) : NAN;
        x = &b->vals[xi];
        ox_value *g = NULL, *be = NULL;
        bool ok = two == 2 && eps >= 0;
        if (ok && cnt >= 8) {
            const char *gn = other_input(node_at(b, nodes[7]), node_at(b, nodes[6])->output[0]);
            ok = gn && (g = vector_const(b, gn, C));
        }
        if (ok && cnt >= 9) {
            const char *bn = other_input(node_at(b, nodes[8]), node_at(b, nodes[7])->output[0]);
            ok = bn && (be = vector_const(b, bn, C));
        }
        if (ok) /* ox_layer_norm copies the scale and bias before it defines values */
            st = ox_layer_norm(b, x, g ? &g->host : NULL, g && g->initializer ? g->name : NULL,
                               be ? &be->host : NULL, be && be->initializer ? be->name : NULL, eps,
                               last->output[0]);
    }
    if (st == SLIM_OK)
        for (int i = 1; i < cnt; i++)
            b->done[nodes[i]] = true;
    return st;
}
