/*
 * dsl/model.c - a model file as a whole: its top-level keys, includes,
 * plugins, vars and blocks, then the layers, then the head (logits,
 * predictions, accuracy, and for training the losses), and the public API of
 * <slim/model.h>.
 */
#include "dsl/dsl.h"
#include "dsl/paths.h"
#include "core/file.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define MAX_FILE_BYTES (16u << 20)
#define MAX_INCLUDE_DEPTH 16

/* ---- files ---------------------------------------------------------------------- */

static slim_status read_file(dsl_arena *a, const char *path, char **text, size_t *len,
                             const dnode *at, slim_error *err)
{
    uint8_t *buf;
    slim_error e = {0};
    slim_status st = slim__file_read(path, "model file", MAX_FILE_BYTES, &buf, len, &e);
    if (st)
        return dsl_fail(err, at, st, "%s", e.msg);
    *text = dsl_strndup(a, (const char *)buf, *len);
    free(buf);
    return *text ? SLIM_OK : dsl_fail(err, at, SLIM_ENOMEM, "out of memory");
}

static const char *dir_of(dsl_arena *a, const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return ".";
    if (slash == path)
        return "/";
    return dsl_strndup(a, path, (size_t)(slash - path));
}

static const char *rel_path(dsl_arena *a, const char *dir, const char *p)
{
    if (p[0] == '/' || !dir || !strcmp(dir, "."))
        return dsl_strdup(a, p);
    return dsl_printf(a, "%s/%s", dir, p);
}

/* ---- top-level keys --------------------------------------------------------------- */

static const char *const main_keys[] = {"name",     "description",  "num_classes", "image_size",
                                        "channels", "weight_decay", "vars",        "functions",
                                        "include",  "plugins",      "defaults",    "blocks",
                                        "layers",   "head",         "input_layout"};
#define N_MAIN_KEYS 15
static const char *const include_keys[] = {"description", "vars",     "functions", "include",
                                           "plugins",     "defaults", "blocks"};
#define N_INCLUDE_KEYS 7

static slim_status top_int(dsl *d, const dnode *root, const char *key, int64_t lo, int64_t hi,
                           int64_t *out)
{
    const dnode *n = dnode_get(root, key);
    if (!n)
        return SLIM_OK;
    dval v;
    TRY(dsl_resolve(&d->ev, d->globals, n, &v));
    if (v.kind != DV_INT)
        return dsl_fail(d->err, n, SLIM_ETYPE, "found %s '%s' for %s, expected an integer",
                        dval_kind_str(&v), dval_str(d->arena, &v), key);
    if (v.i < lo || v.i > hi)
        return dsl_fail(d->err, n, SLIM_EINVAL,
                        "found %lld for %s, expected an integer in [%lld, %lld]", (long long)v.i,
                        key, (long long)lo, (long long)hi);
    *out = v.i;
    return SLIM_OK;
}

static slim_status set_global(dsl *d, const char *name, dval v)
{
    return env_set(d->arena, d->globals, name, &v, d->err);
}

/* A list of strings (or one string) under key: include:, plugins:. */
static slim_status string_list(dsl *d, const dnode *n, const char *key, const dnode ***items,
                               int *count)
{
    *count = 0;
    if (!n)
        return SLIM_OK;
    if (n->kind == DN_SCALAR) {
        *items = dsl_alloc(d->arena, sizeof **items);
        if (!*items)
            return dsl_fail(d->err, n, SLIM_ENOMEM, "out of memory");
        (*items)[0] = n;
        *count = 1;
    } else if (n->kind == DN_SEQ) {
        *items = (const dnode **)n->items;
        *count = n->n;
    } else {
        return dsl_fail(d->err, n, SLIM_ETYPE,
                        "found %s for %s:, expected a file name or a list of them",
                        dnode_kind_str(n), key);
    }
    for (int i = 0; i < *count; i++)
        if ((*items)[i]->kind != DN_SCALAR || !(*items)[i]->str[0])
            return dsl_fail(d->err, (*items)[i], SLIM_ETYPE,
                            "found %s in %s:, expected a file name", dnode_kind_str((*items)[i]),
                            key);
    return SLIM_OK;
}

/* ---- plugins: each file once per registry ------------------------------------------ */

typedef struct loaded_plugin {
    const slim_registry *reg;
    char path[512];
} loaded_plugin;
static loaded_plugin loaded[64];
static int n_loaded;

static slim_status load_plugin(dsl *d, const char *path, const dnode *at)
{
    if (slim__dsl_limits.no_files)
        return dsl_fail(d->err, at, SLIM_EUNSUPPORTED, "plugins are disabled here");
    char real[512];
    if (!realpath(path, real))
        snprintf(real, sizeof real, "%s", path);
    slim_error pe = {0};
    slim_status st = slim_registry_load_plugin(d->reg, path, &pe);
    if (st == SLIM_OK) {
        if (n_loaded < 64) {
            loaded[n_loaded].reg = d->reg;
            snprintf(loaded[n_loaded].path, sizeof loaded[n_loaded].path, "%s", real);
            n_loaded++;
        }
        return SLIM_OK;
    }
    /* the same file again into the same registry: its ops are there already */
    for (int i = 0; i < n_loaded; i++)
        if (loaded[i].reg == d->reg && !strcmp(loaded[i].path, real))
            return SLIM_OK;
    return dsl_fail(d->err, at, st, "%s", pe.msg);
}

static slim_status plugins(dsl *d, const dsl_file *f, const dnode *n)
{
    const dnode **items;
    int count;
    TRY(string_list(d, n, "plugins", &items, &count));
    for (int i = 0; i < count; i++) {
        dval v;
        TRY(dsl_resolve(&d->ev, d->globals, items[i], &v));
        if (v.kind != DV_STR)
            return dsl_fail(d->err, items[i], SLIM_ETYPE, "found %s in plugins:, expected a path",
                            dval_kind_str(&v));
        const char *p = v.s;
        const char *rel = rel_path(d->arena, f->dir, p);
        if (!rel)
            return dsl_fail(d->err, items[i], SLIM_ENOMEM, "out of memory");
        /* relative to the model file when it is there, else as dlopen finds it */
        if (access(rel, R_OK) == 0 || strchr(p, '/'))
            p = rel;
        TRY(load_plugin(d, p, items[i]));
    }
    return SLIM_OK;
}

/* ---- vars and defines ------------------------------------------------------------------ */

typedef struct define {
    const char *name;
    const char *value;
    bool used;
} define;

typedef struct loader {
    dsl *d;
    define *defs;
    int n_defs;
    const char *stack[MAX_INCLUDE_DEPTH];
    int depth;
    const char **seen;
    int n_seen;
    const dsl_defaults *defaults;
} loader;

static slim_status vars(loader *L, const dnode *n)
{
    dsl *d = L->d;
    if (!n)
        return SLIM_OK;
    if (n->kind != DN_MAP)
        return dsl_fail(d->err, n, SLIM_ETYPE, "found %s for vars:, expected a mapping name: value",
                        dnode_kind_str(n));
    for (int i = 0; i < n->n; i++) {
        const char *name = n->keys[i]->str;
        static const char *const builtin[] = {
            "name",  "num_classes", "image_size", "channels", "batch_size", "weight_decay",
            "index", "in_channels", "in_height",  "in_width", "input"};
        for (int b = 0; b < 11; b++)
            if (!strcmp(name, builtin[b]))
                return dsl_fail(d->err, n->keys[i], SLIM_EINVAL,
                                "found var '%s', which is built in, expected another name", name);
        dval v;
        define *df = NULL;
        for (int k = 0; k < L->n_defs; k++)
            if (!strcmp(L->defs[k].name, name))
                df = &L->defs[k];
        if (df) {
            dsl_scalar_value(df->value, false, &v);
            v.at = n->items[i];
            df->used = true;
        } else {
            TRY(dsl_resolve(&d->ev, d->globals, n->items[i], &v));
        }
        TRY(set_global(d, name, v));
    }
    return SLIM_OK;
}

/* functions: {"depth(d)": "max(int(d * depth_multiplier), min_depth)"} */
static slim_status functions(dsl *d, const dnode *n)
{
    if (!n)
        return SLIM_OK;
    if (n->kind != DN_MAP)
        return dsl_fail(d->err, n, SLIM_ETYPE,
                        "found %s for functions:, expected a mapping \"name(a, b)\": expression",
                        dnode_kind_str(n));
    for (int i = 0; i < n->n; i++) {
        const dnode *k = n->keys[i], *body = n->items[i];
        const char *s = k->str, *open = strchr(s, '('), *close = strrchr(s, ')');
        bool ok = open && close && close > open && !close[1] && open > s;
        for (const char *p = s; ok && p < open; p++)
            ok = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_' ||
                 (p > s && *p >= '0' && *p <= '9');
        if (!ok)
            return dsl_fail(d->err, k, SLIM_EINVAL,
                            "found '%s' in functions:, expected name(parameter, ...)", s);
        if (body->kind != DN_SCALAR || !body->str[0])
            return dsl_fail(d->err, body, SLIM_ETYPE,
                            "found %s as the body of %s, expected an expression",
                            dnode_kind_str(body), s);
        dval f = {.kind = DV_FUNC, .at = body};
        f.s = body->str[0] == '$' ? body->str + 1 : body->str;
        /* parameter names between the parentheses */
        dval params[16];
        int np = 0;
        const char *p = open + 1;
        while (p < close) {
            while (p < close && (*p == ' ' || *p == ','))
                p++;
            const char *st = p;
            while (p < close && *p != ',' && *p != ' ')
                p++;
            if (p == st)
                break;
            if (np == 16)
                return dsl_fail(d->err, k, SLIM_EINVAL, "found more than 16 parameters in %s", s);
            params[np] = (dval){.kind = DV_STR, .s = dsl_strndup(d->arena, st, (size_t)(p - st))};
            if (!params[np].s)
                return dsl_fail(d->err, k, SLIM_ENOMEM, "out of memory");
            np++;
        }
        f.n = np;
        f.items = dsl_alloc(d->arena, (size_t)(np ? np : 1) * sizeof *f.items);
        const char *name = dsl_strndup(d->arena, s, (size_t)(open - s));
        if (!f.items || !name)
            return dsl_fail(d->err, k, SLIM_ENOMEM, "out of memory");
        memcpy(f.items, params, (size_t)np * sizeof *params);
        TRY(set_global(d, name, f));
    }
    return SLIM_OK;
}

/* ---- blocks ------------------------------------------------------------------------- */

static slim_status blocks(dsl *d, const dnode *n)
{
    if (!n)
        return SLIM_OK;
    if (n->kind != DN_MAP)
        return dsl_fail(d->err, n, SLIM_ETYPE,
                        "found %s for blocks:, expected a mapping of block names to definitions",
                        dnode_kind_str(n));
    for (int i = 0; i < n->n; i++) {
        const char *name = n->keys[i]->str;
        const dnode *def = n->items[i];
        const dsl_block *prev = dsl_block_get(d, name);
        if (prev)
            return dsl_fail(d->err, n->keys[i], SLIM_EEXIST,
                            "found block '%s' defined again (first at %s:%d:%d), expected one "
                            "definition",
                            name, prev->def->file, prev->def->line, prev->def->col);
        if (!strcmp(name, "scope") || !strcmp(name, "identity") || dsl_is_layer_kind(name) ||
            slim_registry_find(d->reg, name))
            return dsl_fail(
                d->err, n->keys[i], SLIM_EEXIST,
                "found block '%s', which is already a layer kind, expected another name", name);
        if (def->kind != DN_MAP)
            return dsl_fail(d->err, def, SLIM_ETYPE,
                            "found %s for block '%s', expected a mapping with params: and layers:",
                            dnode_kind_str(def), name);
        static const char *const keys[] = {"description", "params", "defaults", "layers", "output"};
        TRY(dsl_check_keys(d->err, def, keys, 5, "a block"));
        const dnode *params = dnode_get(def, "params");
        if (params && params->kind == DN_SCALAR && !params->quoted && !params->str[0])
            params = NULL;
        if (params && params->kind == DN_SEQ) {
            /* [a, b]: every parameter required */
            dnode *m = dsl_alloc(d->arena, sizeof *m);
            if (!m)
                return dsl_fail(d->err, params, SLIM_ENOMEM, "out of memory");
            *m = *params;
            m->kind = DN_MAP;
            m->keys = dsl_alloc(d->arena, (size_t)(params->n ? params->n : 1) * sizeof *m->keys);
            m->items = dsl_alloc(d->arena, (size_t)(params->n ? params->n : 1) * sizeof *m->items);
            dnode *null = dsl_alloc(d->arena, sizeof *null);
            if (!m->keys || !m->items || !null)
                return dsl_fail(d->err, params, SLIM_ENOMEM, "out of memory");
            *null = *params;
            null->kind = DN_SCALAR;
            null->str = "";
            null->quoted = false;
            for (int k = 0; k < params->n; k++) {
                if (params->items[k]->kind != DN_SCALAR)
                    return dsl_fail(d->err, params->items[k], SLIM_ETYPE,
                                    "found %s in params:, expected a parameter name",
                                    dnode_kind_str(params->items[k]));
                m->keys[k] = params->items[k];
                m->items[k] = null;
            }
            params = m;
        } else if (params && params->kind != DN_MAP) {
            return dsl_fail(d->err, params, SLIM_ETYPE,
                            "found %s for params:, expected a mapping name: default (no value = "
                            "required) or a list of names",
                            dnode_kind_str(params));
        }
        for (int k = 0; params && k < params->n; k++) {
            static const char *const res[] = {"name", "inputs", "repeat", "stack", "if"};
            for (int r = 0; r < 5; r++)
                if (!strcmp(params->keys[k]->str, res[r]))
                    return dsl_fail(d->err, params->keys[k], SLIM_EINVAL,
                                    "found parameter '%s', which every layer has, expected "
                                    "another name",
                                    res[r]);
        }
        const dnode *layers = dnode_get(def, "layers");
        if (!layers)
            return dsl_fail(d->err, def, SLIM_EINVAL,
                            "found block '%s' without layers:, expected its list of layers", name);
        const dnode *defaults = dnode_get(def, "defaults");
        if (defaults)
            TRY(dsl_check_defaults(d, defaults));
        if (d->n_blocks == d->cap_blocks) {
            int cap = d->cap_blocks ? 2 * d->cap_blocks : 16;
            dsl_block *nb = dsl_alloc(d->arena, (size_t)cap * sizeof *nb);
            if (!nb)
                return dsl_fail(d->err, def, SLIM_ENOMEM, "out of memory");
            if (d->n_blocks)
                memcpy(nb, d->blocks, (size_t)d->n_blocks * sizeof *nb);
            d->blocks = nb;
            d->cap_blocks = cap;
        }
        d->blocks[d->n_blocks++] = (dsl_block){.name = name,
                                               .def = def,
                                               .params = params,
                                               .layers = layers,
                                               .defaults = defaults,
                                               .output = dnode_get(def, "output")};
    }
    return SLIM_OK;
}

/* ---- one file and its includes ---------------------------------------------------------- */

static slim_status load_file(loader *L, const char *path, const char *text, size_t len,
                             bool is_main, const dnode *at, const dnode **root_out);

static slim_status process(loader *L, const dsl_file *f, bool is_main)
{
    dsl *d = L->d;
    const dnode *root = f->root;
    const dnode **inc;
    int n_inc;
    TRY(string_list(d, dnode_get(root, "include"), "include", &inc, &n_inc));
    for (int i = 0; i < n_inc; i++) {
        if (slim__dsl_limits.no_files)
            return dsl_fail(d->err, inc[i], SLIM_EUNSUPPORTED, "includes are disabled here");
        const char *p = rel_path(d->arena, f->dir, inc[i]->str);
        if (!p)
            return dsl_fail(d->err, inc[i], SLIM_ENOMEM, "out of memory");
        char real[1024];
        if (!realpath(p, real))
            snprintf(real, sizeof real, "%s", p);
        for (int k = 0; k < L->depth; k++)
            if (!strcmp(L->stack[k], real))
                return dsl_fail(d->err, inc[i], SLIM_EINVAL,
                                "found '%s' including itself (an include cycle), expected files "
                                "that include each other only one way",
                                inc[i]->str);
        bool seen = false;
        for (int k = 0; k < L->n_seen && !seen; k++)
            seen = !strcmp(L->seen[k], real);
        if (seen)
            continue; /* included already (a diamond): once is enough */
        if (L->depth == MAX_INCLUDE_DEPTH)
            return dsl_fail(d->err, inc[i], SLIM_EINVAL, "found includes nested more than %d deep",
                            MAX_INCLUDE_DEPTH);
        const char **ns = dsl_alloc(d->arena, (size_t)(L->n_seen + 1) * sizeof *ns);
        const char *rs = dsl_strdup(d->arena, real);
        if (!ns || !rs)
            return dsl_fail(d->err, inc[i], SLIM_ENOMEM, "out of memory");
        if (L->n_seen)
            memcpy(ns, L->seen, (size_t)L->n_seen * sizeof *ns);
        ns[L->n_seen++] = rs;
        L->seen = ns;
        L->stack[L->depth++] = rs;
        const dnode *iroot;
        TRY(load_file(L, p, NULL, 0, false, inc[i], &iroot));
        L->depth--;
    }
    TRY(plugins(d, f, dnode_get(root, "plugins")));
    TRY(functions(d, dnode_get(root, "functions")));
    TRY(vars(L, dnode_get(root, "vars")));
    TRY(blocks(d, dnode_get(root, "blocks")));
    const dnode *df = dnode_get(root, "defaults");
    if (df && !(df->kind == DN_SCALAR && !df->quoted && !df->str[0])) {
        TRY(dsl_check_defaults(d, df));
        dsl_defaults *nd = dsl_alloc(d->arena, sizeof *nd);
        if (!nd)
            return dsl_fail(d->err, df, SLIM_ENOMEM, "out of memory");
        nd->parent = L->defaults;
        nd->map = df;
        L->defaults = nd;
    }
    (void)is_main;
    return SLIM_OK;
}

static slim_status load_file(loader *L, const char *path, const char *text, size_t len,
                             bool is_main, const dnode *at, const dnode **root_out)
{
    dsl *d = L->d;
    char *buf = (char *)text;
    if (!buf)
        TRY(read_file(d->arena, path, &buf, &len, at, d->err));
    const char *fname = dsl_strdup(d->arena, path);
    if (!fname)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    dnode *root;
    TRY(dsl_yaml_parse(d->arena, fname, buf, len, &root, d->err));
    if (root->kind != DN_MAP)
        return dsl_fail(d->err, root, SLIM_ETYPE,
                        is_main ? "found %s at the top of the model file, expected a mapping "
                                  "(name:, layers: ...)"
                                : "found %s at the top of an included file, expected a mapping "
                                  "(blocks:, defaults: ...)",
                        dnode_kind_str(root));
    if (is_main)
        TRY(dsl_check_keys(d->err, root, main_keys, N_MAIN_KEYS, "a model file"));
    else
        TRY(dsl_check_keys(d->err, root, include_keys, N_INCLUDE_KEYS, "an included file"));
    *root_out = root;
    if (!is_main) {
        dsl_file f = {.path = fname, .dir = dir_of(d->arena, fname), .root = root};
        return process(L, &f, false);
    }
    return SLIM_OK;
}

/* ---- loading ---------------------------------------------------------------------- */

static slim_status load(slim_registry *reg, const char *path, const char *text, size_t len,
                        const slim_model_opts *o, slim_model *m, slim_error *err)
{
    dsl dd = {0};
    dsl *d = &dd;
    d->arena = &m->arena;
    d->reg = reg;
    d->err = err;
    d->ev = (dsl_eval_ctx){.arena = &m->arena, .err = err};
    d->m = m;
    d->opts = o;
    d->budget = slim__dsl_limits.max_layers;
    d->training = o->training;
    d->globals = env_new(d->arena, NULL);
    if (!d->globals)
        return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    dnode at0 = {.file = path, .line = 1, .col = 1};
    if (o->batch_size <= 0 || o->batch_size > (1 << 24))
        return dsl_fail(err, NULL, SLIM_EINVAL, "batch_size %d is out of range, expected 1 .. %d",
                        o->batch_size, 1 << 24);
    if (o->num_classes < 0 || o->image_size < 0 || o->n_plugins < 0 || o->n_defines < 0)
        return dsl_fail(err, NULL, SLIM_EINVAL,
                        "negative num_classes, image_size or counts in the options");
    if (!(o->label_smoothing >= 0 && o->label_smoothing <= 1))
        return dsl_fail(err, NULL, SLIM_EINVAL,
                        "label_smoothing %g is out of range, expected [0, 1]",
                        (double)o->label_smoothing);
    if (o->set_aux_weight && !(o->aux_weight >= 0 && o->aux_weight <= 1e6))
        return dsl_fail(err, NULL, SLIM_EINVAL,
                        "aux_weight %g is out of range, expected a number >= 0",
                        (double)o->aux_weight);
    for (int i = 0; i < o->n_plugins; i++) {
        if (!o->plugins || !o->plugins[i])
            return dsl_fail(err, NULL, SLIM_EINVAL, "plugin %d of the options is NULL", i);
        TRY(load_plugin(d, o->plugins[i], NULL));
    }

    loader L = {.d = d};
    L.defs = dsl_alloc(d->arena, (size_t)(o->n_defines ? o->n_defines : 1) * sizeof *L.defs);
    if (!L.defs)
        return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    if (o->n_defines && !o->defines)
        return dsl_fail(err, NULL, SLIM_EINVAL, "n_defines is %d but defines is NULL",
                        o->n_defines);
    for (int i = 0; i < o->n_defines; i++) {
        const char *eq = o->defines[i] ? strchr(o->defines[i], '=') : NULL;
        if (!eq || eq == o->defines[i])
            return dsl_fail(err, NULL, SLIM_EINVAL, "define '%s': expected name=value",
                            o->defines[i] ? o->defines[i] : "(null)");
        L.defs[i].name = dsl_strndup(d->arena, o->defines[i], (size_t)(eq - o->defines[i]));
        L.defs[i].value = dsl_strdup(d->arena, eq + 1);
        if (!L.defs[i].name || !L.defs[i].value)
            return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    }
    L.n_defs = o->n_defines;

    const dnode *root;
    const char *fname = dsl_strdup(d->arena, path);
    if (!fname)
        return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    char real[1024];
    if (!text && realpath(path, real)) {
        L.seen = dsl_alloc(d->arena, sizeof *L.seen);
        const char *rs = dsl_strdup(d->arena, real);
        if (!L.seen || !rs)
            return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
        L.seen[0] = rs;
        L.n_seen = 1;
        L.stack[L.depth++] = rs;
    }
    TRY(load_file(&L, fname, text, len, true, NULL, &root));
    dsl_file f = {.path = fname, .dir = text ? "." : dir_of(d->arena, fname), .root = root};

    /* name, sizes, weight decay: the globals every expression sees */
    const dnode *nn = dnode_get(root, "name");
    if (!nn)
        return dsl_fail(err, &at0, SLIM_EINVAL,
                        "found no name: in the model file, expected name: followed by the model's "
                        "scope (vgg_16)");
    dval nv;
    TRY(dsl_resolve(&d->ev, d->globals, nn, &nv));
    if (nv.kind != DV_STR || !nv.s[0] || strchr(nv.s, '/') || strchr(nv.s, ':'))
        return dsl_fail(err, nn, SLIM_EINVAL,
                        "found %s '%s' for name, expected a scope name without '/' (vgg_16)",
                        dval_kind_str(&nv), dval_str(d->arena, &nv));
    int64_t classes = 0, image = 0, channels = 3;
    bool nchw = false;
    const dnode *ln = dnode_get(root, "input_layout");
    if (ln) {
        dval lv;
        TRY(dsl_resolve(&d->ev, d->globals, ln, &lv));
        if (lv.kind != DV_STR || (strcasecmp(lv.s, "NHWC") && strcasecmp(lv.s, "NCHW")))
            return dsl_fail(err, ln, SLIM_EINVAL,
                            "found %s '%s' for input_layout, expected NHWC or NCHW",
                            dval_kind_str(&lv), dval_str(d->arena, &lv));
        nchw = !strcasecmp(lv.s, "NCHW");
    }
    TRY(top_int(d, root, "num_classes", 1, 1 << 24, &classes));
    TRY(top_int(d, root, "image_size", 1, 1 << 16, &image));
    TRY(top_int(d, root, "channels", 1, 4096, &channels));
    if (o->num_classes > 0)
        classes = o->num_classes;
    if (o->image_size > 0)
        image = o->image_size;
    if (!classes)
        return dsl_fail(err, &at0, SLIM_EINVAL,
                        "found no num_classes in the model file or the options, expected "
                        "num_classes: N");
    if (!image)
        return dsl_fail(err, &at0, SLIM_EINVAL,
                        "found no image_size in the model file or the options, expected "
                        "image_size: N (height = width)");
    double wd = 0;
    const dnode *wdn = dnode_get(root, "weight_decay");
    if (wdn) {
        dval v;
        TRY(dsl_resolve(&d->ev, d->globals, wdn, &v));
        if (!dval_is_number(&v) || dval_num(&v) < 0 || dval_num(&v) > 1e6)
            return dsl_fail(err, wdn, SLIM_EINVAL,
                            "found %s for weight_decay, expected a number >= 0",
                            dval_str(d->arena, &v));
        wd = dval_num(&v);
    }
    if (o->weight_decay >= 0)
        wd = o->weight_decay;
    d->weight_decay = (float)wd;
    TRY(set_global(d, "name", (dval){.kind = DV_STR, .s = nv.s, .at = nn}));
    TRY(set_global(d, "num_classes", (dval){.kind = DV_INT, .i = classes}));
    TRY(set_global(d, "image_size", (dval){.kind = DV_INT, .i = image}));
    TRY(set_global(d, "channels", (dval){.kind = DV_INT, .i = channels}));
    TRY(set_global(d, "batch_size", (dval){.kind = DV_INT, .i = o->batch_size}));
    TRY(set_global(d, "weight_decay", (dval){.kind = DV_FLOAT, .f = wd}));

    slim_status st = slim_graph_new(reg, &m->g, err);
    if (st != SLIM_OK)
        return st;
    d->g = m->g;
    TRY(process(&L, &f, true));
    for (int i = 0; i < L.n_defs; i++)
        if (!L.defs[i].used)
            return dsl_fail(err, &at0, SLIM_ENOTFOUND,
                            "found the define '%s', but the model declares no such var (vars:), "
                            "expected one of its vars",
                            L.defs[i].name);

    slim_tid images;
    slim_shape is = {4, {o->batch_size, image, image, channels}};
    slim_error ge = {0};
    if (slim_graph_input(d->g, "images", SLIM_F32, &is, &images, &ge) != SLIM_OK)
        return dsl_fail(err, &at0, ge.code, "%s", ge.msg);
    TRY(dsl_name_add(d, "images", images, NULL));
    const dnode *layers = dnode_get(root, "layers");
    if (!layers)
        return dsl_fail(err, &at0, SLIM_EINVAL,
                        "found no layers: in the model file, expected layers: followed by a list");
    slim_tid last;
    TRY(dsl_build_seq(d, d->globals, L.defaults, nv.s, layers, &images, 1, NULL, &last));
    TRY(dsl_head(d, root, nv.s, images, last, classes));

    slim_model_info *info = &m->info;
    info->name = nv.s;
    info->path = fname;
    info->image_size = (int)image;
    info->channels = (int)channels;
    info->input_nchw = nchw;
    info->num_classes = (int)classes;
    info->batch_size = o->batch_size;
    info->n_params = d->n_params_total;
    info->n_trainable = d->n_trainable;
    info->madds = d->madds;
    info->n_layers = d->n_layers;
    info->weight_decay = (float)wd;
    m->layers = d->layers;
    m->n_layers = d->n_layers;
    return SLIM_OK;
}

static slim_status load_common(slim_registry *reg, const char *path, const char *text, size_t len,
                               const slim_model_opts *o, slim_model **out, slim_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!out)
        return dsl_fail(err, NULL, SLIM_EINVAL, "slim_model_load needs somewhere to put the model");
    *out = NULL;
    if (!reg || !path || !o)
        return dsl_fail(err, NULL, SLIM_EINVAL,
                        "slim_model_load needs a registry, a path and options");
    slim_model *m = calloc(1, sizeof *m);
    if (!m)
        return dsl_fail(err, NULL, SLIM_ENOMEM, "out of memory");
    m->arena.limit = 1u << 30;
    slim_status st = load(reg, path, text, len, o, m, err);
    if (st != SLIM_OK) {
        slim_model_free(m);
        return st;
    }
    *out = m;
    return SLIM_OK;
}

bool slim__dsl_is_onnx_path(const char *path)
{
    size_t l = path ? strlen(path) : 0;
    return l > 5 && !strcasecmp(path + l - 5, ".onnx");
}

slim_status slim__dsl_model_load(slim_registry *reg, const char *path, const slim_model_opts *o,
                                 slim_model **out, slim_error *err)
{
    return load_common(reg, path, NULL, 0, o, out, err);
}

slim_status slim_model_load_string(slim_registry *reg, const char *name, const char *text,
                                   size_t len, const slim_model_opts *o, slim_model **out,
                                   slim_error *err)
{
    if (!text) {
        if (err)
            memset(err, 0, sizeof *err);
        return dsl_fail(err, NULL, SLIM_EINVAL, "slim_model_load_string needs a text");
    }
    return load_common(reg, name ? name : "<string>", text, len, o, out, err);
}

void slim_model_free(slim_model *m)
{
    if (!m)
        return;
    slim_graph_free(m->g);
    dsl_arena_free(&m->arena);
    free(m);
}

slim_graph *slim_model_graph(slim_model *m)
{
    return m ? m->g : NULL;
}

const slim_model_info *slim_model_get_info(const slim_model *m)
{
    return m ? &m->info : NULL;
}

int64_t slim_model_step_madds(const slim_model *m, const char *step)
{
    int64_t sum = 0;
    int n = slim_model_layer_count(m);
    for (const char *p = step; p && *p;) {
        const char *e = strstr(p, " + ");
        size_t len = e ? (size_t)(e - p) : strlen(p);
        for (int i = 0; i < n; i++) {
            const slim_model_layer *l = slim_model_layer_at(m, i);
            if (l->madds > 0 && l->name && strlen(l->name) == len && !strncmp(l->name, p, len)) {
                sum += l->madds;
                break;
            }
        }
        p = e ? e + 3 : NULL;
    }
    return sum;
}

int slim_model_layer_count(const slim_model *m)
{
    return m ? m->n_layers : 0;
}

const slim_model_layer *slim_model_layer_at(const slim_model *m, int i)
{
    return m && i >= 0 && i < m->n_layers ? &m->layers[i] : NULL;
}

/* ---- finding a zoo model ------------------------------------------------------------- */

static bool try_path(char *path, size_t n, const char *dir, const char *name)
{
    int w = snprintf(path, n, "%s/%s.yaml", dir, name);
    return w > 0 && (size_t)w < n && access(path, R_OK) == 0;
}

slim_status slim_model_find(const char *name, char *path, size_t n, slim_error *err)
{
    if (err)
        memset(err, 0, sizeof *err);
    if (!name || !name[0] || !path || n == 0)
        return dsl_fail(err, NULL, SLIM_EINVAL, "slim_model_find needs a name and a buffer");
    size_t nl = strlen(name);
    if (strchr(name, '/') || (nl > 5 && !strcmp(name + nl - 5, ".yaml")) ||
        slim__dsl_is_onnx_path(name)) {
        if (access(name, R_OK) != 0)
            return dsl_fail(err, NULL, SLIM_ENOTFOUND, "cannot open model file '%s': %s", name,
                            strerror(errno));
        if (nl >= n)
            return dsl_fail(err, NULL, SLIM_EINVAL, "the path '%s' is too long", name);
        memcpy(path, name, nl + 1);
        return SLIM_OK;
    }
    const char *dirs[34];
    int nd = 0;
    char envbuf[4096] = "";
    const char *ev = getenv("SLIM_MODEL_PATH");
    if (ev)
        snprintf(envbuf, sizeof envbuf, "%s", ev);
    char *save = NULL;
    for (char *t = strtok_r(envbuf, ":", &save); t && nd < 32; t = strtok_r(NULL, ":", &save))
        if (*t)
            dirs[nd++] = t;
    dirs[nd++] = SLIM_PKGDATADIR "/models";
    dirs[nd++] = SLIM_SRC_MODELS;
    for (int i = 0; i < nd; i++)
        if (try_path(path, n, dirs[i], name))
            return SLIM_OK;
    /* a near miss among the models there */
    char known[64][64];
    const char *cands[64];
    int nc = 0;
    for (int i = 0; i < nd && nc < 64; i++) {
        DIR *dir = opendir(dirs[i]);
        if (!dir)
            continue;
        struct dirent *de;
        while ((de = readdir(dir)) && nc < 64) {
            size_t l = strlen(de->d_name);
            if (l > 5 && l < 64 && !strcmp(de->d_name + l - 5, ".yaml")) {
                snprintf(known[nc], sizeof known[nc], "%.*s", (int)(l - 5), de->d_name);
                cands[nc] = known[nc];
                nc++;
            }
        }
        closedir(dir);
    }
    const char *sug = dsl_suggest(name, cands, nc);
    if (sug)
        return dsl_fail(err, NULL, SLIM_ENOTFOUND, "no model named '%s', did you mean '%s'?", name,
                        sug);
    return dsl_fail(err, NULL, SLIM_ENOTFOUND,
                    "no model named '%s' in $SLIM_MODEL_PATH, %s/models or %s (give a path to a "
                    ".yaml file, or see slimrun inspect --list)",
                    name, SLIM_PKGDATADIR, SLIM_SRC_MODELS);
}
