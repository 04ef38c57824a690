/*
 * dsl/params.c - what the layers of layers.c are made of: graph nodes and the
 * layer records, their parameters (initializers, weight decay, trainability,
 * TF-Slim's variable names), attributes of registry ops checked against the
 * op's schema, activations, and TF-Slim's batch_norm with its variables; and
 * the limits every model is held to.
 */
#include "dsl/dsl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Generous for real models (VGG-16's fc6 is 2^26.6 values), small enough that a
 * mistyped size fails with a message instead of exhausting memory. */
dsl_limits slim__dsl_limits = {
    .max_param_elems = (int64_t)1 << 30,
    .max_total_elems = (int64_t)1 << 31,
    .max_layers = 200000,
    .max_depth = 48,
};

slim_status dsl_add_node(dsl *d, const dnode *at, const char *op, const char *name,
                         const slim_tid *in, int n_in, const slim_attrs *attrs, slim_tid *out)
{
    slim_error e = {0};
    slim_status st = slim_graph_add(d->g, op, name, in, n_in, attrs, out, 1, NULL, &e);
    if (st != SLIM_OK)
        return dsl_fail(d->err, at, st, "%s", e.msg);
    return SLIM_OK;
}

slim_status dsl_record_layer(dsl *d, const char *name, const char *op, const slim_tid *in, int n_in,
                             slim_tid out, int64_t params, int64_t madds, const dnode *at)
{
    if (d->n_layers == d->cap_layers) {
        int cap = d->cap_layers ? 2 * d->cap_layers : 64;
        slim_model_layer *nl = dsl_alloc(d->arena, (size_t)cap * sizeof *nl);
        if (!nl)
            return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
        if (d->n_layers)
            memcpy(nl, d->layers, (size_t)d->n_layers * sizeof *nl);
        d->layers = nl;
        d->cap_layers = cap;
    }
    slim_tid *ins = dsl_alloc(d->arena, (size_t)(n_in ? n_in : 1) * sizeof *ins);
    if (!ins)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    memcpy(ins, in, (size_t)n_in * sizeof *in);
    slim_model_layer *l = &d->layers[d->n_layers++];
    *l = (slim_model_layer){.name = name,
                            .op = op,
                            .output = out,
                            .n_inputs = n_in,
                            .inputs = ins,
                            .n_params = params,
                            .madds = madds,
                            .file = at ? at->file : NULL,
                            .line = at ? at->line : 0,
                            .col = at ? at->col : 0};
    d->madds = d->madds > INT64_MAX - madds ? INT64_MAX : d->madds + madds;
    return SLIM_OK;
}

const char *dsl_shape_text(dsl *d, const slim_shape *s)
{
    char buf[160];
    size_t used = 0;
    buf[used++] = '(';
    for (int i = 0; i < s->rank && used < sizeof buf - 24; i++)
        used += (size_t)snprintf(buf + used, sizeof buf - used, "%s%lld", i ? "," : "",
                                 (long long)s->dim[i]);
    snprintf(buf + used, sizeof buf - used, ")");
    const char *p = dsl_strdup(d->arena, buf);
    return p ? p : "?";
}

slim_tensor_desc dsl_tensor_info(dsl *d, slim_tid t)
{
    slim_tensor_desc td = {0};
    slim_graph_tensor_info(d->g, t, &td);
    return td;
}

/* ---- parameters ------------------------------------------------------------------- */

static slim_status parse_init(dsl *d, const env *e, const dnode *at, slim_init *init)
{
    dval v;
    TRY(dsl_resolve(&d->ev, e, at, &v));
    const char *type = NULL;
    dsl_args opt = {.kind = "an initializer", .at = at};
    if (v.kind == DV_STR) {
        type = v.s;
    } else if (v.kind == DV_MAP) {
        TRY(args_collect(d, "an initializer", at, NULL, v.map, NULL, &opt));
        TRY(args_str(d, e, &opt, "type", &type));
        if (!type)
            return dsl_fail(d->err, at, SLIM_EINVAL,
                            "found an initializer without type:, expected {type: "
                            "truncated_normal, stddev: 0.01} or a name like zeros");
    } else {
        return dsl_fail(
            d->err, at, SLIM_ETYPE,
            "found %s as an initializer, expected a name (zeros, ones, xavier, he_normal "
            "...) or a mapping {type: ..., ...}",
            dval_kind_str(&v));
    }
    memset(init, 0, sizeof *init);
    static const char *const types[] = {"zeros",          "ones",           "constant",
                                        "uniform",        "normal",         "truncated_normal",
                                        "xavier",         "xavier_uniform", "xavier_normal",
                                        "glorot_uniform", "glorot_normal",  "variance_scaling",
                                        "he_normal",      "he_uniform"};
    const char *keys[8] = {"type"};
    int nk = 1;
    if (!strcmp(type, "zeros")) {
        init->kind = SLIM_INIT_ZEROS;
    } else if (!strcmp(type, "ones")) {
        init->kind = SLIM_INIT_CONSTANT;
        init->value = 1;
    } else if (!strcmp(type, "constant")) {
        init->kind = SLIM_INIT_CONSTANT;
        keys[nk++] = "value";
        TRY(args_float(d, e, &opt, "value", -1e30, 1e30, &init->value));
    } else if (!strcmp(type, "uniform")) {
        init->kind = SLIM_INIT_UNIFORM;
        init->lo = -0.05;
        init->hi = 0.05; /* tf.random_uniform_initializer's defaults are [0, 1); keras' +-0.05 */
        keys[nk++] = "min";
        keys[nk++] = "max";
        TRY(args_float(d, e, &opt, "min", -1e30, 1e30, &init->lo));
        TRY(args_float(d, e, &opt, "max", -1e30, 1e30, &init->hi));
        if (init->hi < init->lo)
            return dsl_fail(d->err, at, SLIM_EINVAL,
                            "found a uniform initializer with max %g < min %g, expected min <= max",
                            init->hi, init->lo);
    } else if (!strcmp(type, "normal") || !strcmp(type, "truncated_normal")) {
        init->kind = type[0] == 'n' ? SLIM_INIT_NORMAL : SLIM_INIT_TRUNCATED_NORMAL;
        init->stddev = 1;
        keys[nk++] = "mean";
        keys[nk++] = "stddev";
        TRY(args_float(d, e, &opt, "mean", -1e30, 1e30, &init->mean));
        TRY(args_float(d, e, &opt, "stddev", 0, 1e30, &init->stddev));
    } else if (!strcmp(type, "xavier") || !strcmp(type, "xavier_uniform") ||
               !strcmp(type, "glorot_uniform")) {
        init->kind = SLIM_INIT_XAVIER_UNIFORM;
    } else if (!strcmp(type, "xavier_normal") || !strcmp(type, "glorot_normal")) {
        init->kind = SLIM_INIT_XAVIER_NORMAL;
    } else if (!strcmp(type, "variance_scaling") || !strcmp(type, "he_normal") ||
               !strcmp(type, "he_uniform")) {
        init->kind = SLIM_INIT_VARIANCE_SCALING;
        init->factor = 2.0;
        init->mode = SLIM_FAN_IN;
        init->uniform = !strcmp(type, "he_uniform");
        if (type[0] == 'v') {
            keys[nk++] = "factor";
            keys[nk++] = "mode";
            keys[nk++] = "uniform";
            TRY(args_float(d, e, &opt, "factor", 1e-30, 1e30, &init->factor));
            const char *mode = NULL;
            TRY(args_choice(d, e, &opt, "mode", "fan_in|fan_out|fan_avg", &mode));
            if (mode)
                init->mode = !strcmp(mode, "fan_in")    ? SLIM_FAN_IN
                             : !strcmp(mode, "fan_out") ? SLIM_FAN_OUT
                                                        : SLIM_FAN_AVG;
            TRY(args_bool(d, e, &opt, "uniform", &init->uniform));
        }
    } else {
        const char *sug = dsl_suggest(type, types, 14);
        return dsl_fail(d->err, opt.n ? args_find(&opt, "type")->vals[0] : at, SLIM_EINVAL,
                        "unknown initializer '%s'%s%s%s, expected one of: zeros, ones, constant, "
                        "uniform, normal, truncated_normal, xavier_uniform, xavier_normal, "
                        "variance_scaling, he_normal, he_uniform",
                        type, sug ? " (did you mean '" : "", sug ? sug : "", sug ? "'?)" : "");
    }
    if (opt.n)
        TRY(args_check_used(d, &opt, keys, nk));
    return SLIM_OK;
}

/* Create scope/suffix with the options of opts (weights: {...}). */
slim_status dsl_make_param(dsl *d, const env *e, dsl_args *opts, const char *scope,
                           const dsl_param_spec *ps, int rank, const int64_t *dim, bool trainable,
                           const dnode *at, slim_tid *out, int64_t *count)
{
    slim_init init = ps->init;
    bool tr = trainable && !ps->state;
    double lr_mult = 1, decay_mult = ps->decay_mult;
    if (opts) {
        dsl_arg *ia = args_find(opts, "init");
        if (ia) {
            ia->used = true;
            TRY(parse_init(d, e, ia->vals[0], &init));
        }
        bool t = true;
        TRY(args_bool(d, e, opts, "trainable", &t));
        if (!t)
            tr = false;
        else if (ps->state && args_has(opts, "trainable") &&
                 !args_find(opts, "trainable")->from_defaults)
            return dsl_fail(d->err, args_find(opts, "trainable")->vals[0], SLIM_EINVAL,
                            "found trainable: true for %s, expected false: moving statistics "
                            "are updated by batch_norm, not by the optimizer",
                            ps->key);
        TRY(args_float(d, e, opts, "lr_mult", 0, 1e6, &lr_mult));
        TRY(args_float(d, e, opts, "decay_mult", 0, 1e6, &decay_mult));
        static const char *const keys[] = {"init", "trainable", "lr_mult", "decay_mult"};
        TRY(args_check_used(d, opts, keys, 4));
    }
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        if (__builtin_mul_overflow(n, dim[i], &n))
            n = INT64_MAX;
    slim_shape s = slim_shape_make(rank, dim);
    const char *name = dsl_printf(d->arena, "%s/%s", scope, ps->suffix);
    if (!name)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    if (n > slim__dsl_limits.max_param_elems)
        return dsl_fail(d->err, at, SLIM_EINVAL,
                        "found parameter '%s' of shape %s (%lld values), expected at most %lld "
                        "values per parameter",
                        name, dsl_shape_text(d, &s), (long long)n,
                        (long long)slim__dsl_limits.max_param_elems);
    if (d->n_params_total > slim__dsl_limits.max_total_elems - n)
        return dsl_fail(d->err, at, SLIM_EINVAL,
                        "found parameter '%s' taking the model past %lld values, expected a "
                        "smaller model",
                        name, (long long)slim__dsl_limits.max_total_elems);
    if (d->opts && d->opts->param_value) {
        /* the caller's values (an imported model's weights) */
        const float *v = d->opts->param_value(d->opts->param_value_user, name, &s);
        if (v)
            init = (slim_init){.kind = SLIM_INIT_DATA, .data = v};
    }
    slim_param_opts po = {.flags = tr ? SLIM_PARAM_TRAINABLE : 0u, .lr_mult = (float)lr_mult};
    slim_error pe = {0};
    slim_status st = slim_graph_param(d->g, name, &s, &init, &po, out, &pe);
    if (st != SLIM_OK)
        return dsl_fail(d->err, at, st, "%s", pe.msg);
    d->n_params_total += n;
    if (tr)
        d->n_trainable += n;
    *count += n;
    if (d->n_params == d->cap_params) {
        int cap = d->cap_params ? 2 * d->cap_params : 64;
        dsl_param *np = dsl_alloc(d->arena, (size_t)cap * sizeof *np);
        if (!np)
            return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
        if (d->n_params)
            memcpy(np, d->params, (size_t)d->n_params * sizeof *np);
        d->params = np;
        d->cap_params = cap;
    }
    d->params[d->n_params++] =
        (dsl_param){.t = *out, .decay = (float)(d->weight_decay * decay_mult), .trainable = tr};
    return SLIM_OK;
}

/* A constant vector (gamma of a batch norm without scale): shared, not a
 * model parameter. */
slim_status dsl_const_vec(dsl *d, double value, int64_t c, const dnode *at, slim_tid *out)
{
    int64_t key = value == 0 ? -c : c;
    for (int i = 0; i < d->n_ones; i++)
        if (d->ones_c[i] == key) {
            *out = d->ones[i];
            return SLIM_OK;
        }
    const char *name =
        dsl_printf(d->arena, "slim_const/%s_%lld", value == 0 ? "zeros" : "ones", (long long)c);
    slim_shape s = slim_shape_make(1, &c);
    slim_init init = {.kind = SLIM_INIT_CONSTANT, .value = value};
    slim_param_opts po = {.flags = 0};
    slim_error pe = {0};
    slim_status st = name ? slim_graph_param(d->g, name, &s, &init, &po, out, &pe) : SLIM_ENOMEM;
    if (st != SLIM_OK)
        return dsl_fail(d->err, at, st, "%s", name ? pe.msg : "out of memory");
    if (d->n_ones < 64) {
        d->ones[d->n_ones] = *out;
        d->ones_c[d->n_ones++] = key;
    }
    return SLIM_OK;
}

/* ---- attributes of registry ops -------------------------------------------------- */

static slim_status attr_from(dsl *d, const dnode *at, const char *key, const char *opname,
                             const slim_attr_spec *s, const dval *v, slim_attrs *attrs)
{
    char kind[160];
    snprintf(kind, sizeof kind, "op %s", opname);
    double lo = s->ranged ? s->min : -1e300, hi = s->ranged ? s->max : 1e300;
    switch (s->type) {
    case SLIM_ATTR_INT:
    case SLIM_ATTR_FLOAT: {
        if (!dval_is_number(v) || (s->type == SLIM_ATTR_INT && v->kind != DV_INT))
            return dsl_fail(d->err, at, SLIM_ETYPE, "found %s '%s' for '%s' of %s, expected %s",
                            dval_kind_str(v), dval_str(d->arena, v), key, kind,
                            s->type == SLIM_ATTR_INT ? "an integer" : "a number");
        double x = dval_num(v);
        if (!(x >= lo && x <= hi))
            return dsl_fail(d->err, at, SLIM_EINVAL,
                            "found %s for '%s' of %s, expected a value in [%g, %g]",
                            dval_str(d->arena, v), key, kind, lo, hi);
        return s->type == SLIM_ATTR_INT ? slim_attrs_set_int(attrs, s->name, v->i)
                                        : slim_attrs_set_float(attrs, s->name, x);
    }
    case SLIM_ATTR_BOOL:
        if (v->kind != DV_BOOL)
            return dsl_fail(d->err, at, SLIM_ETYPE,
                            "found %s '%s' for '%s' of %s, expected true or false",
                            dval_kind_str(v), dval_str(d->arena, v), key, kind);
        return slim_attrs_set_bool(attrs, s->name, v->b);
    case SLIM_ATTR_STRING: {
        if (v->kind != DV_STR)
            return dsl_fail(d->err, at, SLIM_ETYPE, "found %s '%s' for '%s' of %s, expected text",
                            dval_kind_str(v), dval_str(d->arena, v), key, kind);
        if (!s->choices)
            return slim_attrs_set_str(attrs, s->name, v->s);
        const char *p = s->choices;
        size_t sl = strlen(v->s);
        while (*p) {
            const char *q = strchr(p, '|');
            size_t l = q ? (size_t)(q - p) : strlen(p);
            if (l == sl && strncasecmp(p, v->s, l) == 0) {
                char buf[128];
                snprintf(buf, sizeof buf, "%.*s", (int)l, p);
                return slim_attrs_set_str(attrs, s->name, buf);
            }
            p += l + (q ? 1 : 0);
        }
        return dsl_fail(d->err, at, SLIM_EINVAL, "found '%s' for '%s' of %s, expected one of %s",
                        v->s, key, kind, s->choices);
    }
    case SLIM_ATTR_INTS:
    case SLIM_ATTR_FLOATS: {
        bool ints = s->type == SLIM_ATTR_INTS;
        int n;
        const dval *items;
        dval one[2];
        if (v->kind == DV_LIST) {
            n = v->n;
            items = v->items;
            if (n > 64)
                return dsl_fail(d->err, at, SLIM_EINVAL,
                                "found a list of %d for '%s' of %s, expected at most 64 values", n,
                                key, kind);
        } else {
            /* a scalar for a pair ([1, 1] default): both, as kernel sizes and strides */
            one[0] = one[1] = *v;
            n = s->def && s->def[0] == '[' && strchr(s->def, ',') &&
                        !strchr(strchr(s->def, ',') + 1, ',')
                    ? 2
                    : 1;
            if (!s->def && (!strcmp(s->name, "ksize") || !strcmp(s->name, "strides")))
                n = 2;
            items = one;
        }
        int64_t iv[64];
        double fv[64];
        for (int i = 0; i < n; i++) {
            const dval *x = &items[i];
            const dnode *xa = x->at ? x->at : at;
            if (!dval_is_number(x) || (ints && x->kind != DV_INT))
                return dsl_fail(d->err, xa, SLIM_ETYPE, "found %s '%s' in '%s' of %s, expected %s",
                                dval_kind_str(x), dval_str(d->arena, x), key, kind,
                                ints ? "integers" : "numbers");
            double xv = dval_num(x);
            if (!(xv >= lo && xv <= hi))
                return dsl_fail(d->err, xa, SLIM_EINVAL,
                                "found %s in '%s' of %s, expected values in [%g, %g]",
                                dval_str(d->arena, x), key, kind, lo, hi);
            iv[i] = x->i;
            fv[i] = xv;
        }
        return ints ? slim_attrs_set_ints(attrs, s->name, iv, n)
                    : slim_attrs_set_floats(attrs, s->name, fv, n);
    }
    }
    return SLIM_EINVAL;
}

/* Every key of a not yet used in a is an attribute of op desc. */
slim_status dsl_op_attrs(dsl *d, const env *e, const slim_op_desc *desc, dsl_args *a,
                         slim_attrs *attrs, const char *const *extra, int n_extra)
{
    for (int i = 0; i < a->n; i++) {
        dsl_arg *g = &a->a[i];
        if (g->used)
            continue;
        const char *name = g->key;
        const slim_attr_spec *s = NULL;
        for (int j = 0; j < desc->n_attrs && !s; j++)
            if (!strcmp(desc->attrs[j].name, name))
                s = &desc->attrs[j];
        /* TF-Slim's names for the pooling arguments */
        for (int j = 0; j < desc->n_attrs && !s; j++)
            if ((!strcmp(name, "kernel_size") && !strcmp(desc->attrs[j].name, "ksize")) ||
                (!strcmp(name, "stride") && !strcmp(desc->attrs[j].name, "strides")))
                s = &desc->attrs[j];
        if (!s)
            continue;
        g->used = true;
        /* a name and its alias (stride / strides): the explicit one, else the canonical */
        const char *other = !strcmp(name, "kernel_size") ? "ksize"
                            : !strcmp(name, "stride")    ? "strides"
                            : !strcmp(name, "ksize")     ? "kernel_size"
                            : !strcmp(name, "strides")   ? "stride"
                                                         : NULL;
        dsl_arg *o = other ? args_find(a, other) : NULL;
        if (o) {
            bool alias = !strcmp(s->name, other);
            if (!g->from_defaults && !o->from_defaults)
                return dsl_fail(d->err, g->keynode, SLIM_EINVAL,
                                "found both '%s' and '%s', expected one of them", name, other);
            if (g->from_defaults && (!o->from_defaults || alias))
                continue; /* the other one wins */
        }
        dval v;
        TRY(dsl_resolve(&d->ev, e, g->vals[0], &v));
        slim_status st = attr_from(d, g->vals[0], name, desc->name, s, &v, attrs);
        if (st != SLIM_OK) {
            if (d->err && d->err->code == st && d->err->line)
                return st;
            return dsl_fail(d->err, g->vals[0], st, "cannot set '%s' of op %s: %s", name,
                            desc->name, slim_status_str(st));
        }
    }
    const char *acc[96];
    int n = 0;
    for (int i = 0; i < n_extra && n < 96; i++)
        acc[n++] = extra[i];
    for (int j = 0; j < desc->n_attrs && n < 96; j++)
        acc[n++] = desc->attrs[j].name;
    return args_check_used(d, a, acc, n);
}

/* activation: none | op | {op: {attrs}} applied to x, node name scope/op. */
slim_status dsl_activation(dsl *d, const env *e, dsl_args *a, const char *def, const char *scope,
                           slim_tid x, slim_tid *y)
{
    *y = x;
    dval v;
    const dnode *at;
    TRY(args_value(d, e, a, "activation", &v, &at));
    const char *op = def;
    const dnode *attr_map = NULL;
    if (at) {
        if (v.kind == DV_NULL || (v.kind == DV_STR && !strcasecmp(v.s, "none")) ||
            (v.kind == DV_BOOL && !v.b))
            return SLIM_OK;
        if (v.kind == DV_STR) {
            op = v.s;
        } else if (v.kind == DV_MAP && v.map->n == 1) {
            op = v.map->keys[0]->str;
            attr_map = v.map->items[0];
            if (attr_map->kind == DN_SCALAR && !attr_map->quoted && !attr_map->str[0])
                attr_map = NULL;
            else if (attr_map->kind != DN_MAP)
                return dsl_fail(d->err, attr_map, SLIM_ETYPE,
                                "found %s for the attributes of activation %s, expected a mapping",
                                dnode_kind_str(attr_map), op);
        } else {
            return dsl_fail(d->err, at, SLIM_ETYPE,
                            "found %s for activation, expected none, an op name (relu, relu6, "
                            "swish ...) or {op: {attributes}}",
                            dval_kind_str(&v));
        }
    } else {
        at = a->at;
    }
    if (!op)
        return SLIM_OK;
    const slim_op_desc *desc = slim_registry_find(d->reg, op);
    if (!desc)
        return dsl_fail(d->err, at, SLIM_ENOTFOUND,
                        "found unknown activation '%s', expected none or an op with one input "
                        "(relu, relu6, elu, leaky_relu, sigmoid, tanh, or a plugin's)",
                        op);
    if (desc->min_inputs > 1)
        return dsl_fail(d->err, at, SLIM_EINVAL,
                        "found activation '%s', which takes %d inputs, expected an op of one input",
                        op, desc->min_inputs);
    slim_attrs *attrs = slim_attrs_new();
    if (!attrs)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    slim_status st = SLIM_OK;
    if (attr_map) {
        dsl_args aa;
        st = args_collect(d, op, attr_map, NULL, attr_map, NULL, &aa);
        if (st == SLIM_OK)
            st = dsl_op_attrs(d, e, desc, &aa, attrs, NULL, 0);
    }
    const char *name = dsl_printf(d->arena, "%s/%s", scope, op);
    if (st == SLIM_OK)
        st = name ? dsl_add_node(d, at, op, name, &x, 1, attrs, y)
                  : dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    slim_attrs_free(attrs);
    return st;
}

/* The activation a batch norm can apply itself (the op's activation
 * attribute): relu or relu6 named plainly, or the default def when the layer
 * does not say; NULL for anything else (none, attributes, other ops). */
slim_status dsl_fusable_activation(dsl *d, const env *e, dsl_args *a, const char *def,
                                   const char **act)
{
    dval v;
    const dnode *at;
    TRY(args_value(d, e, a, "activation", &v, &at));
    const char *op = at ? (v.kind == DV_STR ? v.s : NULL) : def;
    *act = op && (!strcmp(op, "relu") || !strcmp(op, "relu6")) ? op : NULL;
    return SLIM_OK;
}

/* ---- batch norm --------------------------------------------------------------------- */

const char *const dsl_bn_keys[] = {"decay", "epsilon",         "center",
                                   "scale", "use_batch_stats", "beta",
                                   "gamma", "moving_mean",     "moving_variance"};

/* TF-Slim's batch_norm over x with its variables under scope. */
/* act: NULL, or relu / relu6 applied by the op itself (one pass, and no
 * pre-activation tensor kept for backward); the node keeps the scope's name. */
slim_status dsl_batch_norm(dsl *d, const env *e, dsl_args *o, const char *scope, bool trainable,
                           const dnode *at, const char *act, slim_tid x, slim_tid *y,
                           int64_t *count)
{
    double decay = 0.999, eps = 0.001;
    bool center = true, scale = false, batch_stats = true;
    TRY(args_float(d, e, o, "decay", 0, 1, &decay));
    TRY(args_float(d, e, o, "epsilon", 0, 1e30, &eps));
    TRY(args_bool(d, e, o, "center", &center));
    TRY(args_bool(d, e, o, "scale", &scale));
    TRY(args_bool(d, e, o, "use_batch_stats", &batch_stats));
    slim_tensor_desc xd = dsl_tensor_info(d, x);
    if (xd.shape.rank < 2)
        return dsl_fail(d->err, at, SLIM_ESHAPE,
                        "found input %s for batch_norm, expected channels last with rank >= 2",
                        dsl_shape_text(d, &xd.shape));
    int64_t c = xd.shape.dim[xd.shape.rank - 1];
    static const dsl_param_spec specs[4] = {
        {.key = "beta", .suffix = "beta", .init = {.kind = SLIM_INIT_ZEROS}},
        {.key = "gamma", .suffix = "gamma", .init = {.kind = SLIM_INIT_CONSTANT, .value = 1}},
        {.key = "moving_mean",
         .suffix = "moving_mean",
         .init = {.kind = SLIM_INIT_ZEROS},
         .state = true},
        {.key = "moving_variance",
         .suffix = "moving_variance",
         .init = {.kind = SLIM_INIT_CONSTANT, .value = 1},
         .state = true},
    };
    slim_tid t[4];
    bool want[4] = {center, scale, true, true};
    for (int i = 0; i < 4; i++) {
        dsl_args po;
        TRY(args_sub(d, e, o, specs[i].key, specs[i].key, &po));
        if (!want[i]) {
            TRY(dsl_const_vec(d, i == 0 ? 0.0 : 1.0, c, at, &t[i]));
            continue;
        }
        TRY(dsl_make_param(d, e, po.at ? &po : NULL, scope, &specs[i], 1, &c, trainable, at, &t[i],
                           count));
    }
    slim_attrs *attrs = slim_attrs_new();
    if (!attrs)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    slim_attrs_set_float(attrs, "epsilon", eps);
    slim_attrs_set_float(attrs, "decay", decay);
    slim_attrs_set_bool(attrs, "use_batch_stats", batch_stats);
    if (act)
        slim_attrs_set_str(attrs, "activation", act);
    slim_tid in[5] = {x, t[1], t[0], t[2], t[3]};
    slim_status st = dsl_add_node(d, at, "batch_norm", scope, in, 5, attrs, y);
    slim_attrs_free(attrs);
    return st;
}

/* normalizer: batch_norm with the batch_norm: options, or biases. */
slim_status dsl_norm_or_bias(dsl *d, const env *e, dsl_args *a, const char *scope, bool trainable,
                             const dnode *at, slim_tid conv_in[3], int *n_conv_in, bool *use_bn,
                             dsl_args *bn_opts, int64_t *count, int64_t outputs)
{
    const char *norm = NULL;
    TRY(args_choice(d, e, a, "normalizer", "none|batch_norm", &norm));
    *use_bn = norm && !strcmp(norm, "batch_norm");
    TRY(args_sub(d, e, a, "batch_norm", "batch_norm options", bn_opts));
    if (*use_bn) {
        args_mark_used(a, "biases");
        return SLIM_OK;
    }
    dval bv;
    const dnode *bat;
    dsl_arg *ba = args_find(a, "biases");
    bool biases = true;
    dsl_args bo = {0};
    if (ba) {
        TRY(args_value(d, e, a, "biases", &bv, &bat));
        if (bv.kind == DV_NULL || (bv.kind == DV_BOOL && !bv.b) ||
            (bv.kind == DV_STR && !strcasecmp(bv.s, "none")))
            biases = false;
        else if (bv.kind == DV_MAP)
            TRY(args_sub(d, e, a, "biases", "biases", &bo));
        else if (bv.kind != DV_BOOL)
            return dsl_fail(d->err, bat, SLIM_ETYPE,
                            "found %s for biases, expected none, true or options {init: ..., "
                            "trainable: ..., lr_mult: ..., decay_mult: ...}",
                            dval_kind_str(&bv));
    }
    if (!biases)
        return SLIM_OK;
    static const dsl_param_spec bs = {
        .key = "biases", .suffix = "biases", .init = {.kind = SLIM_INIT_ZEROS}};
    return dsl_make_param(d, e, bo.at ? &bo : NULL, scope, &bs, 1, &outputs, trainable, at,
                          &conv_in[(*n_conv_in)++], count);
}
