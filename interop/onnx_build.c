/*
 * interop/onnx_build.c - the importer's value table, layouts, host feeds and
 * layers (see onnx_build.h), and the import itself.
 */
#include "interop/onnx_build.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* ---- messages and strings ----------------------------------------------------------- */

static slim_status vfail(ox_builder *b, slim_status code, const char *fmt, va_list ap)
{
    char msg[900];
    vsnprintf(msg, sizeof msg, fmt, ap);
    const Onnx__NodeProto *n = b->node;
    if (n)
        return slim__error(b->err, code, "%s: node '%s' (%s, opset %lld): %s", b->file,
                           n->name && n->name[0] ? n->name : "", n->op_type, (long long)b->opset,
                           msg);
    return slim__error(b->err, code, "%s: %s", b->file, msg);
}

slim_status ox_fail(ox_builder *b, slim_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim_status st = vfail(b, code, fmt, ap);
    va_end(ap);
    return st;
}

slim_status ox_unsup(ox_builder *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim_status st = vfail(b, SLIM_EUNSUPPORTED, fmt, ap);
    va_end(ap);
    return st;
}

slim_status ox_oom(ox_builder *b)
{
    return ox_fail(b, SLIM_ENOMEM, "out of memory");
}

const char *ox_strdup(ox_builder *b, const char *s)
{
    if (b->n_strs == b->cap_strs) {
        int ncap = b->cap_strs ? 2 * b->cap_strs : 256;
        char **ns = realloc(b->strs, (size_t)ncap * sizeof *ns);
        if (!ns)
            return NULL;
        b->strs = ns;
        b->cap_strs = ncap;
    }
    char *c = strdup(s);
    if (c)
        b->strs[b->n_strs++] = c;
    return c;
}

const char *ox_fmt_float(char *buf, size_t n, double v)
{
    /* the shortest text that reads back as the same float: 0.9, not 0.899999976 */
    float f = (float)v;
    for (int p = 6; p <= 9; p++) {
        snprintf(buf, n, "%.*g", p, (double)f);
        if (strtof(buf, NULL) == f)
            break;
    }
    return buf;
}

const char *ox_float(ox_builder *b, double v)
{
    char buf[40];
    return ox_strdup(b, ox_fmt_float(buf, sizeof buf, v));
}

const char *ox_printf(ox_builder *b, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return ox_strdup(b, buf);
}

/* ---- values ------------------------------------------------------------------------- */

ox_value *ox_find(ox_builder *b, const char *name)
{
    int i = slim__names_get(&b->val_names, name);
    return i >= 0 ? &b->vals[i] : NULL;
}

ox_value *ox_arg(ox_builder *b, const Onnx__NodeProto *n, size_t i)
{
    if (!slim__ox_has_input(n, i)) {
        ox_fail(b, SLIM_EINVAL, "input %zu is missing", i);
        return NULL;
    }
    ox_value *v = ox_find(b, n->input[i]);
    if (!v)
        ox_fail(b, SLIM_EINVAL, "input %zu '%s' is used before it is defined (or never is)", i,
                n->input[i]);
    return v;
}

static ox_value *new_value(ox_builder *b, const char *name)
{
    if (b->n_vals == b->cap_vals) {
        int ncap = b->cap_vals ? 2 * b->cap_vals : 64;
        ox_value *nv = realloc(b->vals, (size_t)ncap * sizeof *nv);
        if (!nv)
            return NULL;
        b->vals = nv;
        b->cap_vals = ncap;
    }
    const char *nm = ox_strdup(b, name);
    if (!nm || !slim__names_reserve(&b->val_names, b->n_vals + 1))
        return NULL;
    ox_value *v = &b->vals[b->n_vals];
    memset(v, 0, sizeof *v);
    v->name = nm;
    v->tid = -1;
    v->layer = -1;
    v->var_layer = -1;
    /* later definitions shadow earlier ones (a graph input may share its
     * name with an initializer) */
    slim__names_put(&b->val_names, nm, b->n_vals);
    b->n_vals++;
    return v;
}

slim_status ox_def_host(ox_builder *b, const char *name, const slim__ox_tensor *t, bool fed,
                        bool initializer)
{
    ox_value *v = new_value(b, name);
    if (!v || !slim__ox_tensor_copy(&v->host, t))
        return ox_oom(b);
    v->kind = OX_HOST;
    v->fed = fed;
    v->initializer = initializer;
    v->rank = t->rank;
    memcpy(v->dim, t->dim, sizeof v->dim);
    return SLIM_OK;
}

slim_status ox_def(ox_builder *b, const char *name, slim_tid tid, int layer, const ox_layout *lay,
                   int rank, const int64_t *dim)
{
    if (rank < 0 || rank > OX_MAXD)
        return ox_unsup(b, "a rank-%d result (slim handles up to %d)", rank, OX_MAXD);
    /* lay and dim may point into the value table, which new_value may move */
    ox_layout l = *lay;
    int64_t d[OX_MAXD];
    if (rank)
        memcpy(d, dim, (size_t)rank * sizeof *dim);
    ox_value *v = new_value(b, name);
    if (!v)
        return ox_oom(b);
    v->kind = OX_COMPUTED;
    v->tid = tid;
    v->layer = layer;
    v->lay = l;
    v->rank = rank;
    if (rank)
        memcpy(v->dim, d, (size_t)rank * sizeof *dim);
    return SLIM_OK;
}

slim_status ox_alias(ox_builder *b, const char *name, const char *src)
{
    ox_value *s = ox_find(b, src);
    if (!s)
        return ox_fail(b, SLIM_EINVAL, "value '%s' is used before it is defined", src);
    int si = (int)(s - b->vals);
    ox_value *v = new_value(b, name);
    if (!v)
        return ox_oom(b);
    s = &b->vals[si]; /* new_value may have moved the table */
    const char *nm = v->name;
    *v = *s;
    v->name = nm;
    v->var_layer = -1;
    if (s->kind == OX_HOST && !slim__ox_tensor_copy(&v->host, &s->host)) {
        memset(&v->host, 0, sizeof v->host);
        return ox_oom(b);
    }
    return SLIM_OK;
}

bool ox_is_const(const ox_value *v)
{
    return v->kind == OX_HOST && !v->fed;
}

const ox_use *ox_uses(ox_builder *b, const char *name)
{
    int i = slim__names_get(&b->use_names, name);
    return i >= 0 ? &b->uses[i] : NULL;
}

int ox_sole_consumer(ox_builder *b, const char *name)
{
    const ox_use *u = ox_uses(b, name);
    if (!u || u->n_consumers != 1 || u->graph_output)
        return -1;
    return u->first_consumer;
}

/* ---- layouts ------------------------------------------------------------------------ */

ox_layout ox_plain(int rank)
{
    ox_layout l = {.rank = rank};
    for (int i = 0; i < rank && i < SLIM_MAX_DIMS; i++)
        l.perm[i] = (int8_t)i;
    return l;
}

ox_layout ox_cl(int rank)
{
    ox_layout l = {.rank = 4};
    static const int8_t r4[4] = {0, 2, 3, 1}, r3[4] = {0, -1, 2, 1};
    memcpy(l.perm, rank == 4 ? r4 : r3, 4);
    return l;
}

bool ox_layout_eq(const ox_layout *a, const ox_layout *c)
{
    return a->rank == c->rank && memcmp(a->perm, c->perm, (size_t)a->rank) == 0;
}

bool ox_layout_plain(const ox_layout *l)
{
    for (int i = 0; i < l->rank; i++)
        if (l->perm[i] != i)
            return false;
    return true;
}

slim_shape ox_slim_shape(const ox_layout *l, const int64_t *dim)
{
    slim_shape s = {.rank = l->rank};
    for (int i = 0; i < l->rank; i++)
        s.dim[i] = l->perm[i] >= 0 ? dim[l->perm[i]] : 1;
    return s;
}

int ox_slim_axis(const ox_layout *l, int a)
{
    for (int i = 0; i < l->rank; i++)
        if (l->perm[i] == a)
            return i;
    return -1;
}

ox_layout ox_keep_layout(ox_builder *b, const ox_value *v)
{
    if (v->kind == OX_COMPUTED)
        return v->lay;
    if ((v->rank == 3 || v->rank == 4) && v->fed) {
        b->could_cl = true;
        if (b->o->prefer_cl)
            return ox_cl(v->rank);
    }
    return ox_plain(v->rank);
}

int ox_norm_axis(int64_t axis, int rank)
{
    if (axis < 0)
        axis += rank;
    return axis >= 0 && axis < rank ? (int)axis : -1;
}

void ox_nchw_to_nhwc(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < s; j++)
                dst[(i * s + j) * c + k] = src[(i * c + k) * s + j];
}

void ox_nhwc_to_nchw(const float *src, float *dst, int64_t n, int64_t c, int64_t s)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < c; k++)
            for (int64_t j = 0; j < s; j++)
                dst[(i * c + k) * s + j] = src[(i * s + j) * c + k];
}

bool ox_host_transpose(const slim__ox_tensor *t, const int *perm, slim__ox_tensor *o)
{
    int64_t od[OX_MAXD];
    for (int i = 0; i < t->rank; i++)
        od[i] = t->dim[perm[i]];
    if (!slim__ox_tensor_alloc(o, t->f != NULL, t->rank, od))
        return false;
    o->elem = t->elem;
    int64_t stride[OX_MAXD], idx[OX_MAXD] = {0}, s = 1;
    for (int i = t->rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= t->dim[i];
    }
    for (int64_t k = 0; k < t->numel; k++) {
        int64_t src = 0;
        for (int i = 0; i < t->rank; i++)
            src += idx[i] * stride[perm[i]];
        if (o->f)
            o->f[k] = t->f[src];
        else
            o->i[k] = t->i[src];
        for (int i = t->rank - 1; i >= 0; i--) {
            if (++idx[i] < o->dim[i])
                break;
            idx[i] = 0;
        }
    }
    return true;
}

/* "ncl", "nhwc", "p201" ...: a short tag of a layout for feed names. */
static void layout_tag(const ox_layout *l, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "@");
    for (int i = 0; i < l->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%c", l->perm[i] < 0 ? 'u' : '0' + l->perm[i]);
}

/* ---- names -------------------------------------------------------------------------- */

static bool name_taken(ox_builder *b, const char *name)
{
    return slim__names_get(&b->layer_names, name) >= 0;
}

static bool take_name(ox_builder *b, const char *name)
{
    return slim__names_reserve(&b->layer_names, b->layer_names.n + 1) &&
           slim__names_put(&b->layer_names, name, 1);
}

/* Letters, digits, '_', '-', '.', '/' between parts (the DSL's names), no
 * leading or trailing '/', no "//". */
static void sanitize(const char *in, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = in; *p && k + 1 < n; p++) {
        char c = *p;
        if (!(isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' || c == '/'))
            c = '_';
        if (c == '/' && (k == 0 || out[k - 1] == '/'))
            continue;
        out[k++] = c;
    }
    while (k > 0 && out[k - 1] == '/')
        k--;
    out[k] = '\0';
    if (!out[0])
        snprintf(out, n, "x");
}

const char *ox_unique(ox_builder *b, const char *name)
{
    char buf[512];
    sanitize(name, buf, sizeof buf - 16);
    size_t base = strlen(buf);
    for (int k = 1; name_taken(b, buf) && k < 1000000; k++)
        snprintf(buf + base, sizeof buf - base, "_%d", k);
    const char *s = ox_strdup(b, buf);
    if (s && !take_name(b, s))
        return NULL;
    return s;
}

const char *ox_value_base(ox_builder *b, const char *value_name)
{
    if (!value_name || !value_name[0] || strstr(value_name, "::") ||
        isdigit((unsigned char)value_name[0]))
        return NULL;
    char buf[512];
    size_t rl = strlen(b->root);
    if (b->o->strip_root && strncmp(value_name, b->root, rl) == 0 && value_name[rl] == '/' &&
        value_name[rl + 1])
        value_name += rl + 1;
    snprintf(buf, sizeof buf, "%s", value_name);
    /* PyTorch's parameter suffixes, and slim's (what the layer adds back) */
    static const char *const suffixes[] = {".weight",
                                           ".bias",
                                           ".running_mean",
                                           ".running_var",
                                           "/weights",
                                           "/biases",
                                           "/gamma",
                                           "/beta",
                                           "/moving_mean",
                                           "/moving_variance",
                                           "/depthwise_weights",
                                           "/pointwise_weights"};
    size_t len = strlen(buf);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && strcmp(buf + len - sl, suffixes[i]) == 0) {
            buf[len - sl] = '\0';
            break;
        }
    }
    for (char *p = buf; *p; p++)
        if (*p == '.')
            *p = '/';
    char clean[512];
    sanitize(buf, clean, sizeof clean);
    return ox_strdup(b, clean);
}

/* PyTorch's scoped node names: "/features/features.1/features.1.0/block/block.2/Mul"
 * lists each module by its dotted path relative to the previous part: the
 * module path is features/1/0/block/2, and the op's own part comes last. */
static void module_path(const char *node_name, char *out, size_t n, const char **op_part)
{
    char prev[256] = "";
    size_t k = 0;
    out[0] = '\0';
    *op_part = node_name;
    const char *p = node_name;
    while (*p == '/')
        p++;
    while (*p) {
        const char *q = strchr(p, '/');
        size_t len = q ? (size_t)(q - p) : strlen(p);
        if (!q) {
            *op_part = p;
            break;
        }
        char part[256];
        snprintf(part, sizeof part, "%.*s", (int)len, p);
        size_t pl = strlen(prev);
        const char *add = part;
        if (pl && strncmp(part, prev, pl) == 0 && part[pl] == '.')
            add = part + pl + 1;
        char tmp[256];
        snprintf(tmp, sizeof tmp, "%s", add);
        for (char *c = tmp; *c; c++)
            if (*c == '.')
                *c = '/';
        if (k + strlen(tmp) + 2 < n)
            k += (size_t)snprintf(out + k, n - k, "%s%s", k ? "/" : "", tmp);
        snprintf(prev, sizeof prev, "%s", part);
        p = q + 1;
        while (*p == '/')
            p++;
    }
}

void ox_count_paths(ox_builder *b)
{
    const Onnx__GraphProto *g = b->model->graph;
    if (!slim__names_reserve(&b->path_counts, (int)g->n_node + 1))
        return;
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        char path[400];
        const char *op_part;
        if (!n->name || !n->name[0] || !strcmp(n->op_type, "Constant") ||
            !strcmp(n->op_type, "Identity"))
            continue;
        module_path(n->name, path, sizeof path, &op_part);
        if (!path[0])
            continue;
        int c = slim__names_get(&b->path_counts, path);
        const char *key = c < 0 ? ox_strdup(b, path) : path;
        if (key)
            slim__names_put(&b->path_counts, key, c < 0 ? 1 : c + 1);
    }
}

const char *ox_node_name(ox_builder *b, const char *suffix)
{
    const Onnx__NodeProto *n = b->node;
    char buf[512], path[400];
    const char *op_part = NULL;
    if (n && n->name && n->name[0]) {
        module_path(n->name, path, sizeof path, &op_part);
        if (suffix && !suffix[0])
            snprintf(buf, sizeof buf, "%s", path[0] ? path : op_part); /* a layer owning weights */
        else if (path[0] && !suffix && slim__names_get(&b->path_counts, path) == 1)
            snprintf(buf, sizeof buf, "%s", path); /* the module's only node: its name */
        else if (path[0])
            snprintf(buf, sizeof buf, "%s/%s", path, op_part);
        else
            snprintf(buf, sizeof buf, "%s", op_part);
    } else if (n) {
        snprintf(buf, sizeof buf, "%s_%d", n->op_type, b->node_index);
    } else {
        snprintf(buf, sizeof buf, "x%d", b->uniq++);
    }
    if (suffix && suffix[0]) {
        size_t l = strlen(buf);
        snprintf(buf + l, sizeof buf - l, "/%s", suffix);
    }
    return ox_unique(b, buf);
}

/* ---- feeds and layers --------------------------------------------------------------- */

static ox_feed *find_feed(ox_builder *b, const char *name)
{
    for (int i = 0; i < b->n_feeds; i++)
        if (strcmp(b->feeds[i].name, name) == 0)
            return &b->feeds[i];
    return NULL;
}

/* A parameter (or conformance input) with data; data is copied. */
static slim_status add_feed(ox_builder *b, const char *name, bool is_param, bool trainable,
                            slim_dtype dtype, const slim_shape *shape, const void *data,
                            slim_tid *out)
{
    if (b->n_feeds == b->cap_feeds) {
        int ncap = b->cap_feeds ? 2 * b->cap_feeds : 64;
        ox_feed *nf = realloc(b->feeds, (size_t)ncap * sizeof *nf);
        if (!nf)
            return ox_oom(b);
        b->feeds = nf;
        b->cap_feeds = ncap;
    }
    ox_feed *f = &b->feeds[b->n_feeds];
    memset(f, 0, sizeof *f);
    f->name = ox_strdup(b, name);
    f->is_param = is_param;
    f->dtype = dtype;
    f->shape = *shape;
    size_t bytes = (size_t)slim_shape_numel(shape) * slim_dtype_size(dtype);
    f->data = malloc(bytes ? bytes : 1);
    if (!f->name || !f->data) {
        free(f->data);
        return ox_oom(b);
    }
    memcpy(f->data, data, bytes);
    slim_error e = {0};
    slim_status st;
    if (is_param) {
        slim_init init = {.kind = SLIM_INIT_ZEROS};
        slim_param_opts po = {.flags = trainable ? SLIM_PARAM_TRAINABLE : 0u};
        st = slim_graph_param(b->g, f->name, shape, &init, &po, &f->tid, &e);
    } else {
        st = slim_graph_input(b->g, f->name, dtype, shape, &f->tid, &e);
    }
    if (st != SLIM_OK) {
        free(f->data);
        return ox_fail(b, st, "%s '%s': %s", is_param ? "parameter" : "input", name, e.msg);
    }
    b->n_feeds++;
    *out = f->tid;
    return SLIM_OK;
}

ox_layer *ox_layer_new(ox_builder *b, ox_layer_kind kind, const char *op, const char *name)
{
    if (b->n_layers == b->cap_layers) {
        int ncap = b->cap_layers ? 2 * b->cap_layers : 64;
        ox_layer *nl = realloc(b->layers, (size_t)ncap * sizeof *nl);
        if (!nl)
            return NULL;
        b->layers = nl;
        b->cap_layers = ncap;
    }
    if (!name)
        return NULL;
    ox_layer *l = &b->layers[b->n_layers++];
    memset(l, 0, sizeof *l);
    l->kind = kind;
    l->op = op;
    l->name = name;
    l->out = -1;
    l->folded_into = -1;
    l->k[0] = l->k[1] = l->s[0] = l->s[1] = l->d[0] = l->d[1] = l->groups = 1;
    return l;
}

void ox_kv_set(ox_builder *b, ox_layer *l, const char *key, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (l->n_kv < OX_MAX_KV) {
        l->kv[l->n_kv].key = key;
        l->kv[l->n_kv].val = ox_strdup(b, buf);
        l->n_kv++;
    }
}

void ox_kv_ints(ox_builder *b, ox_layer *l, const char *key, const int64_t *v, int n)
{
    char buf[512];
    size_t k = (size_t)snprintf(buf, sizeof buf, "[");
    for (int i = 0; i < n && k < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%lld", i ? ", " : "", (long long)v[i]);
    if (k < sizeof buf)
        snprintf(buf + k, sizeof buf - k, "]");
    ox_kv_set(b, l, key, "%s", buf);
}

static const char *full_name(ox_builder *b, const char *name, const char *suffix)
{
    return suffix ? ox_printf(b, "%s/%s/%s", b->root, name, suffix)
                  : ox_printf(b, "%s/%s", b->root, name);
}

static slim_status add_node(ox_builder *b, const char *op, const char *name, const slim_tid *in,
                            int n_in, const slim_attrs *a, slim_tid *out)
{
    slim_error e = {0};
    int got = 0;
    slim_status st = slim_graph_add(b->g, op, name, in, n_in, a, out, 1, &got, &e);
    if (st != SLIM_OK)
        return ox_fail(b, st, "%s", e.msg);
    return SLIM_OK;
}

slim_status ox_layer_op(ox_builder *b, ox_layer *l, const slim_tid *in, slim_tid *out)
{
    slim_attrs *a = slim_attrs_new();
    if (!a)
        return ox_oom(b);
    for (int i = 0; i < l->n_kv; i++)
        if (!l->kv[i].val || slim_attrs_set_text(a, l->kv[i].key, l->kv[i].val) != SLIM_OK) {
            slim_attrs_free(a);
            return ox_oom(b);
        }
    const char *nm = full_name(b, l->name, NULL);
    slim_status st = nm ? add_node(b, l->op, nm, in, l->n_in, a, out) : ox_oom(b);
    slim_attrs_free(a);
    if (st == SLIM_OK)
        l->out = *out;
    return st;
}

static slim_status param(ox_builder *b, const ox_layer *l, const char *suffix,
                         const slim_shape *shape, const float *data, bool trainable, slim_tid *out)
{
    const char *scope = l->scope ? l->scope : l->name;
    const char *nm = full_name(b, scope, suffix);
    if (!nm || (suffix && !take_name(b, ox_printf(b, "%s/%s", scope, suffix))))
        return ox_oom(b);
    return add_feed(b, nm, true, trainable, SLIM_F32, shape, data, out);
}

slim_status ox_layer_params(ox_builder *b, ox_layer *l, slim_tid x, const float *const *w,
                            slim_tid *out)
{
    slim_tid in[5] = {x};
    slim_attrs *a = slim_attrs_new();
    if (!a)
        return ox_oom(b);
    slim_status st = SLIM_OK;
    const char *op = NULL;
    int n_in = 0;
    slim_tensor_desc xd;
    slim_graph_tensor_info(b->g, x, &xd);
    if (l->kind == OXL_CONV) {
        int64_t cg = xd.shape.rank == 4 ? xd.shape.dim[3] / l->groups : 0;
        slim_shape ws = slim_shape_make(4, (int64_t[]){l->k[0], l->k[1], cg, l->cout});
        slim_shape bs = slim_shape_make(1, &l->cout);
        static const char *const wn[3] = {"weights", "depthwise_weights", "pointwise_weights"};
        st = param(b, l, wn[l->sep], &ws, w[0], true, &in[1]);
        if (st == SLIM_OK && l->bias)
            st = param(b, l, "biases", &bs, w[1], true, &in[2]);
        n_in = l->bias ? 3 : 2;
        op = "conv2d";
        slim_attrs_set_ints(a, "strides", l->s, 2);
        slim_attrs_set_ints(a, "dilations", l->d, 2);
        slim_attrs_set_str(a, "padding", "EXPLICIT");
        slim_attrs_set_ints(a, "pads", l->pads, 4);
        slim_attrs_set_int(a, "groups", l->groups);
    } else if (l->kind == OXL_FC) {
        int64_t k = 1;
        for (int i = 1; i < xd.shape.rank; i++)
            k *= xd.shape.dim[i];
        slim_shape ws = slim_shape_make(2, (int64_t[]){k, l->cout});
        slim_shape bs = slim_shape_make(1, &l->cout);
        st = param(b, l, "weights", &ws, w[0], true, &in[1]);
        if (st == SLIM_OK && l->bias)
            st = param(b, l, "biases", &bs, w[1], true, &in[2]);
        n_in = l->bias ? 3 : 2;
        op = "fully_connected";
    } else if (l->kind == OXL_BN) {
        int64_t c = xd.shape.dim[xd.shape.rank - 1];
        slim_shape cs = slim_shape_make(1, &c);
        static const char *const names[4] = {"gamma", "beta", "moving_mean", "moving_variance"};
        for (int i = 0; i < 4 && st == SLIM_OK; i++)
            st = param(b, l, names[i], &cs, w[i], i < 2, &in[1 + i]);
        n_in = 5;
        op = "batch_norm";
        slim_attrs_set_float(a, "epsilon", l->eps);
        slim_attrs_set_float(a, "decay", l->decay);
        if (l->train_bn) {
            slim_attrs_set_bool(a, "use_batch_stats", true);
            slim_attrs_set_bool(a, "moving_var_unbiased", false);
        }
    } else if (l->kind == OXL_LN) {
        int64_t c = xd.shape.dim[xd.shape.rank - 1];
        slim_shape cs = slim_shape_make(1, &c);
        st = param(b, l, "gamma", &cs, w[0], true, &in[1]);
        if (st == SLIM_OK)
            st = param(b, l, "beta", &cs, w[1], true, &in[2]);
        n_in = 3;
        op = "layer_norm";
        slim_attrs_set_float(a, "epsilon", l->eps);
    } else if (l->kind == OXL_VAR) {
        slim_attrs_free(a);
        st = param(b, l, NULL, &l->shape, w[0], l->trainable, out);
        if (st == SLIM_OK)
            l->out = *out;
        return st;
    }
    if (st == SLIM_OK) {
        const char *nm = full_name(b, l->name, NULL);
        st = nm ? add_node(b, op, nm, in, n_in, a, out) : ox_oom(b);
    }
    slim_attrs_free(a);
    if (st == SLIM_OK)
        l->out = *out;
    return st;
}

slim_status ox_op(ox_builder *b, const char *op, const char *name, const slim_tid *in,
                  const int *in_layers, int n_in, const ox_kv *kv, int n_kv, slim_tid *out,
                  int *layer)
{
    if (n_in > SLIM_MAX_INPUTS)
        return ox_unsup(b, "%d inputs (slim's ops take at most %d)", n_in, SLIM_MAX_INPUTS);
    ox_layer *l = ox_layer_new(b, OXL_OP, op, name ? name : ox_node_name(b, NULL));
    if (!l)
        return ox_oom(b);
    l->n_in = n_in;
    for (int i = 0; i < n_in; i++)
        l->in[i] = in_layers ? in_layers[i] : OX_IMAGES;
    for (int i = 0; i < n_kv && i < OX_MAX_KV; i++)
        l->kv[l->n_kv++] = kv[i];
    if (layer)
        *layer = b->n_layers - 1;
    return ox_layer_op(b, l, in, out);
}

/* ---- inputs of nodes ---------------------------------------------------------------- */

/* A host tensor's data rearranged for layout l (f32 or i64). */
static bool host_in_layout(const slim__ox_tensor *t, const ox_layout *l, slim__ox_tensor *out)
{
    int perm[OX_MAXD], k = 0;
    for (int i = 0; i < l->rank; i++)
        if (l->perm[i] >= 0)
            perm[k++] = l->perm[i];
    if (k != t->rank)
        return false;
    return ox_host_transpose(t, perm, out);
}

slim_status ox_value_in(ox_builder *b, ox_value *v, const ox_layout *want, slim_tid *out,
                        int *layer)
{
    if (v->kind == OX_STATE)
        return ox_unsup(b, "value '%s' (a running statistic) feeds another node", v->name);
    if (v->kind == OX_COMPUTED) {
        if (v->flat_c)
            return ox_unsup(b, "internal: a lazily flattened value reached %s", "an op");
        if (ox_layout_eq(&v->lay, want)) {
            *out = v->tid;
            if (layer)
                *layer = v->layer;
            return SLIM_OK;
        }
        return ox_relayout(b, v, want, out, layer);
    }
    const slim__ox_tensor *t = &v->host;
    if (!t->f)
        return ox_unsup(b, "'%s' is %s data; slim's ops compute in f32", v->name,
                        slim__ox_elem_name(t->elem));
    if (want->rank > SLIM_MAX_DIMS)
        return ox_unsup(b, "'%s' has rank %d (slim handles up to %d)", v->name, t->rank,
                        SLIM_MAX_DIMS);
    char tag[24] = "";
    if (!ox_layout_plain(want) || want->rank != t->rank)
        layout_tag(want, tag, sizeof tag);
    slim_shape s = ox_slim_shape(want, t->dim);
    int vi = (int)(v - b->vals);
    if (v->fed) {
        /* a conformance input: a slim input (or trainable parameter) per layout */
        const char *nm = ox_printf(b, "%s%s", v->name, tag);
        ox_feed *f = nm ? find_feed(b, nm) : NULL;
        if (layer)
            *layer = OX_IMAGES;
        if (f) {
            *out = f->tid;
            return SLIM_OK;
        }
        slim__ox_tensor lt;
        if (!host_in_layout(t, want, &lt))
            return ox_oom(b);
        bool as_param = b->o->trainable_inputs;
        slim_status st = add_feed(b, nm, as_param, as_param, SLIM_F32, &s, lt.f, out);
        slim__ox_tensor_fini(&lt);
        return st;
    }
    /* a constant: a variable layer (one per layout it is needed in) */
    if (!tag[0] && v->var_layer >= 0) {
        *out = b->layers[v->var_layer].out;
        if (layer)
            *layer = v->var_layer;
        return SLIM_OK;
    }
    const char *base = v->initializer ? ox_value_base(b, v->name) : NULL;
    if (!base)
        base = ox_node_name(b, "const");
    const char *nm =
        base ? ox_unique(b, tag[0] ? ox_printf(b, "%s%s", base, tag + 1) : base) : NULL;
    ox_layer *l = nm ? ox_layer_new(b, OXL_VAR, "variable", nm) : NULL;
    if (!l)
        return ox_oom(b);
    l->shape = s;
    l->trainable = v->initializer;
    int li = b->n_layers - 1;
    slim__ox_tensor lt;
    if (!host_in_layout(t, want, &lt))
        return ox_oom(b);
    const float *w[1] = {lt.f};
    slim_status st = ox_layer_params(b, l, -1, w, out);
    slim__ox_tensor_fini(&lt);
    if (st != SLIM_OK)
        return st;
    v = &b->vals[vi];
    if (!tag[0])
        v->var_layer = li;
    if (layer)
        *layer = li;
    return SLIM_OK;
}

slim_status ox_feed_labels(ox_builder *b, const char *name, const slim_shape *shape,
                           const int64_t *data, slim_tid *out)
{
    ox_feed *f = find_feed(b, name);
    if (f) {
        *out = f->tid;
        return SLIM_OK;
    }
    return add_feed(b, name, false, false, SLIM_I64, shape, data, out);
}

slim_status ox_input(ox_builder *b, const char *name, const ox_layout *want, slim_tid *out,
                     int *layer)
{
    ox_value *v = ox_find(b, name);
    if (!v)
        return ox_fail(b, SLIM_EINVAL, "value '%s' is used before it is defined", name);
    return ox_value_in(b, v, want, out, layer);
}

slim_status ox_const(ox_builder *b, const char *name, const slim_shape *shape, const float *data,
                     slim_tid *out, int *layer)
{
    const char *nm = ox_node_name(b, name);
    ox_layer *l = nm ? ox_layer_new(b, OXL_VAR, "variable", nm) : NULL;
    if (!l)
        return ox_oom(b);
    l->shape = *shape;
    l->trainable = false;
    if (layer)
        *layer = b->n_layers - 1;
    const float *w[1] = {data};
    return ox_layer_params(b, l, -1, w, out);
}

/* ---- shapes ------------------------------------------------------------------------- */

slim_status ox_reshape(ox_builder *b, slim_tid x, int x_layer, const int64_t *dims, int rank,
                       slim_tid *out, int *layer)
{
    if (rank > SLIM_MAX_DIMS)
        return ox_unsup(b, "a rank-%d reshape (slim handles up to %d)", rank, SLIM_MAX_DIMS);
    slim_tensor_desc xd;
    slim_graph_tensor_info(b->g, x, &xd);
    int64_t d[SLIM_MAX_DIMS];
    memcpy(d, dims, (size_t)rank * sizeof *d);
    if (b->o->model && rank >= 1 && xd.shape.rank >= 1) {
        /* keep the model file batch-agnostic: the batch is dim 0 (0 = the
         * input's, -1 when it is merged with other dims) */
        bool has_m1 = false;
        for (int i = 1; i < rank; i++)
            has_m1 |= d[i] == -1;
        if (d[0] == xd.shape.dim[0])
            d[0] = 0;
        else if (!has_m1)
            d[0] = -1;
        if (rank == 2 && d[0] == 0)
            d[1] = -1; /* a flatten: whatever the class count (a new head) */
    }
    ox_layer *l = ox_layer_new(b, OXL_OP, "reshape", ox_node_name(b, "reshape"));
    if (!l)
        return ox_oom(b);
    l->n_in = 1;
    l->in[0] = x_layer;
    ox_kv_ints(b, l, "shape", d, rank);
    if (layer)
        *layer = b->n_layers - 1;
    return ox_layer_op(b, l, &x, out);
}

slim_status ox_transpose(ox_builder *b, slim_tid x, int x_layer, const int *perm, int rank,
                         slim_tid *out, int *layer)
{
    ox_layer *l = ox_layer_new(b, OXL_OP, "transpose", ox_node_name(b, "transpose"));
    if (!l)
        return ox_oom(b);
    int64_t p[SLIM_MAX_DIMS];
    for (int i = 0; i < rank; i++)
        p[i] = perm[i];
    l->n_in = 1;
    l->in[0] = x_layer;
    ox_kv_ints(b, l, "perm", p, rank);
    if (layer)
        *layer = b->n_layers - 1;
    return ox_layer_op(b, l, &x, out);
}

slim_status ox_relayout(ox_builder *b, ox_value *v, const ox_layout *want, slim_tid *out,
                        int *layer)
{
    /* drop unit axes, transpose, add the wanted unit axes */
    slim_tid x = v->tid;
    int xl = v->layer;
    ox_layout cur = {0};
    for (int i = 0; i < v->lay.rank; i++)
        if (v->lay.perm[i] >= 0)
            cur.perm[cur.rank++] = v->lay.perm[i];
    slim_status st;
    if (cur.rank != v->lay.rank) {
        slim_shape s = ox_slim_shape(&cur, v->dim);
        if ((st = ox_reshape(b, x, xl, s.dim, s.rank, &x, &xl)) != SLIM_OK)
            return st;
    }
    ox_layout tgt = {0};
    for (int i = 0; i < want->rank; i++)
        if (want->perm[i] >= 0)
            tgt.perm[tgt.rank++] = want->perm[i];
    if (tgt.rank != cur.rank)
        return ox_fail(b, SLIM_EINTERNAL, "layouts of different ranks for '%s'", v->name);
    if (!ox_layout_eq(&cur, &tgt)) {
        int perm[SLIM_MAX_DIMS];
        for (int i = 0; i < tgt.rank; i++)
            perm[i] = ox_slim_axis(&cur, tgt.perm[i]);
        if ((st = ox_transpose(b, x, xl, perm, tgt.rank, &x, &xl)) != SLIM_OK)
            return st;
    }
    if (tgt.rank != want->rank) {
        slim_shape s = ox_slim_shape(want, v->dim);
        if ((st = ox_reshape(b, x, xl, s.dim, s.rank, &x, &xl)) != SLIM_OK)
            return st;
    }
    *out = x;
    if (layer)
        *layer = xl;
    return SLIM_OK;
}
