/*
 * dsl/build.c - expansion: a list of layers becomes graph nodes, in order.
 *
 * Each entry of a layers: list is a one-key mapping, kind: {keys}. Its kind is
 * `scope` (a named group with its own layers), `identity` (a name for an
 * existing tensor), a block from blocks:, a layer that owns parameters
 * (conv2d ...), or any op of the registry (built-in or plugin). An entry's
 * input is the previous entry's output unless inputs: says otherwise, by name
 * (looked up in the current scope, then each enclosing one) or by relative
 * position (-1 = the previous entry). Only earlier layers can be referenced,
 * so a model is always a DAG; expansion is eager, which lets conditions and
 * block parameters see the shapes built so far (in_channels ...).
 */
#include "dsl/dsl.h"
#include "core/names.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const reserved_keys[] = {"name", "inputs", "repeat", "stack", "if"};
#define N_RESERVED 5

/* ---- the name table ------------------------------------------------------------ */

const dsl_name *dsl_name_get(const dsl *d, const char *name)
{
    if (!d->cap_names)
        return NULL;
    uint64_t mask = (uint64_t)d->cap_names - 1;
    for (uint64_t i = slim__name_hash(name) & mask;; i = (i + 1) & mask) {
        const dsl_name *n = &d->names[i];
        if (!n->name)
            return NULL;
        if (strcmp(n->name, name) == 0)
            return n;
    }
}

slim_status dsl_name_add(dsl *d, const char *name, slim_tid t, const dnode *at)
{
    if (2 * (d->n_names + 1) > d->cap_names) {
        int cap = d->cap_names ? 2 * d->cap_names : 256;
        dsl_name *nn = dsl_alloc(d->arena, (size_t)cap * sizeof *nn);
        if (!nn)
            return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
        for (int i = 0; i < d->cap_names; i++) {
            if (!d->names[i].name)
                continue;
            uint64_t j = slim__name_hash(d->names[i].name) & (uint64_t)(cap - 1);
            while (nn[j].name)
                j = (j + 1) & (uint64_t)(cap - 1);
            nn[j] = d->names[i];
        }
        d->names = nn;
        d->cap_names = cap;
    }
    uint64_t mask = (uint64_t)d->cap_names - 1;
    for (uint64_t i = slim__name_hash(name) & mask;; i = (i + 1) & mask) {
        dsl_name *n = &d->names[i];
        if (!n->name) {
            n->name = name;
            n->t = t;
            n->at = at;
            d->n_names++;
            return SLIM_OK;
        }
        if (strcmp(n->name, name) == 0) {
            if (n->at)
                return dsl_fail(d->err, at, SLIM_EEXIST,
                                "found the layer name '%s' again (first at %d:%d), expected a "
                                "name unique in its scope",
                                name, n->at->line, n->at->col);
            return dsl_fail(d->err, at, SLIM_EEXIST,
                            "found the layer name '%s', which is reserved, expected another name",
                            name);
        }
    }
}

const dsl_block *dsl_block_get(const dsl *d, const char *name)
{
    for (int i = 0; i < d->n_blocks; i++)
        if (strcmp(d->blocks[i].name, name) == 0)
            return &d->blocks[i];
    return NULL;
}

/* ---- a sequence ------------------------------------------------------------------ */

typedef struct seqctx {
    const env *e;
    const dsl_defaults *defs;
    const char *scope;
    const slim_tid *inputs;
    int n_inputs;
    slim_tid *entries;
    int n_entries;
    const dnode *seq;
    int index; /* of the entry being built */
} seqctx;

static const char *join(dsl *d, const char *scope, const char *name)
{
    if (!scope || !scope[0])
        return dsl_strdup(d->arena, name);
    return dsl_printf(d->arena, "%s/%s", scope, name);
}

/* The raw name: of a later entry of the same list, for a better message. */
static const dnode *later_entry_named(const seqctx *sc, const char *name)
{
    for (int i = sc->index + 1; sc->seq && i < sc->seq->n; i++) {
        const dnode *it = sc->seq->items[i];
        if (it->kind != DN_MAP || it->n != 1 || it->items[0]->kind != DN_MAP)
            continue;
        const dnode *nm = dnode_get(it->items[0], "name");
        if (nm && nm->kind == DN_SCALAR && strcmp(nm->str, name) == 0)
            return nm;
    }
    return NULL;
}

static slim_status lookup(dsl *d, const seqctx *sc, const dnode *at, const char *ref, slim_tid *out)
{
    if (strcmp(ref, "input") == 0) {
        *out = sc->inputs[0];
        return SLIM_OK;
    }
    if (strncmp(ref, "input:", 6) == 0) {
        char *end;
        long k = strtol(ref + 6, &end, 10);
        if (*end || k < 0 || k >= sc->n_inputs)
            return dsl_fail(d->err, at, SLIM_ENOTFOUND,
                            "found '%s', expected input:0 .. input:%d (this list has %d input%s)",
                            ref, sc->n_inputs - 1, sc->n_inputs, sc->n_inputs == 1 ? "" : "s");
        *out = sc->inputs[k];
        return SLIM_OK;
    }
    /* the current scope, then each enclosing one, then the top */
    size_t sl = strlen(sc->scope);
    char *buf = malloc(sl + strlen(ref) + 2);
    if (!buf)
        return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
    memcpy(buf, sc->scope, sl + 1);
    for (;;) {
        size_t l = strlen(buf);
        char *full = malloc(l + strlen(ref) + 2);
        if (!full) {
            free(buf);
            return dsl_fail(d->err, at, SLIM_ENOMEM, "out of memory");
        }
        if (l)
            sprintf(full, "%s/%s", buf, ref);
        else
            strcpy(full, ref);
        const dsl_name *n = dsl_name_get(d, full);
        free(full);
        if (n) {
            free(buf);
            *out = n->t;
            return SLIM_OK;
        }
        if (!l)
            break;
        char *slash = strrchr(buf, '/');
        if (slash)
            *slash = 0;
        else
            buf[0] = 0;
    }
    free(buf);
    const dnode *later = later_entry_named(sc, ref);
    if (later)
        return dsl_fail(d->err, at, SLIM_ENOTFOUND,
                        "found input '%s', which is defined later (at %d:%d), expected a layer "
                        "defined before this one (inputs must come first, so the graph has no "
                        "cycle)",
                        ref, later->line, later->col);
    return dsl_fail(d->err, at, SLIM_ENOTFOUND,
                    "found undefined name '%s' in inputs, expected an earlier layer of scope "
                    "'%s' or an enclosing scope, 'input', or a relative position like -1",
                    ref, sc->scope);
}

static slim_status resolve_ref(dsl *d, const seqctx *sc, const env *e, const dnode *at,
                               slim_tid *out)
{
    dval v;
    TRY(dsl_resolve(&d->ev, e, at, &v));
    if (v.kind == DV_INT) {
        if (v.i >= 0)
            return dsl_fail(d->err, at, SLIM_EINVAL,
                            "found %lld as an input, expected a negative relative position "
                            "(-1 = the previous layer) or a layer name",
                            (long long)v.i);
        if (-v.i > sc->index)
            return dsl_fail(d->err, at, SLIM_EINVAL,
                            "found the relative input %lld, but only %d layer%s precede%s it in "
                            "this list; expected -1 .. -%d, or 'input'",
                            (long long)v.i, sc->index, sc->index == 1 ? "" : "s",
                            sc->index == 1 ? "s" : "", sc->index > 0 ? sc->index : 1);
        *out = sc->entries[sc->index + v.i];
        return SLIM_OK;
    }
    if (v.kind != DV_STR)
        return dsl_fail(d->err, at, SLIM_ETYPE,
                        "found %s as an input, expected a layer name or a relative position (-1)",
                        dval_kind_str(&v));
    return lookup(d, sc, at, v.s, out);
}

static slim_status shape_vars(dsl *d, env *e, slim_tid t, const dnode *at)
{
    slim_tensor_desc td;
    if (slim_graph_tensor_info(d->g, t, &td) != SLIM_OK)
        return SLIM_OK;
    const slim_shape *s = &td.shape;
    dval v = {.kind = DV_INT, .at = at};
    if (s->rank >= 1) {
        v.i = s->dim[s->rank - 1];
        TRY(env_set(d->arena, e, "in_channels", &v, d->err));
    }
    if (s->rank == 4) {
        v.i = s->dim[1];
        TRY(env_set(d->arena, e, "in_height", &v, d->err));
        v.i = s->dim[2];
        TRY(env_set(d->arena, e, "in_width", &v, d->err));
    }
    return SLIM_OK;
}

/* ---- kinds -------------------------------------------------------------------- */

bool dsl_is_layer_kind(const char *kind)
{
    return !strcmp(kind, "conv2d") || !strcmp(kind, "separable_conv2d") ||
           !strcmp(kind, "fully_connected") || !strcmp(kind, "batch_norm") ||
           !strcmp(kind, "layer_norm") || !strcmp(kind, "variable");
}

static const char *default_name(dsl *d, const char *kind)
{
    (void)d;
    if (!strcmp(kind, "conv2d"))
        return "Conv";
    if (!strcmp(kind, "separable_conv2d"))
        return "SeparableConv2d";
    if (!strcmp(kind, "batch_norm"))
        return "BatchNorm";
    if (!strcmp(kind, "layer_norm"))
        return "LayerNorm";
    return kind; /* fully_connected, ops, blocks */
}

static slim_status unknown_kind(dsl *d, const dnode *at, const char *kind)
{
    const char *cands[512];
    int n = 0;
    cands[n++] = "scope";
    cands[n++] = "identity";
    cands[n++] = "conv2d";
    cands[n++] = "separable_conv2d";
    cands[n++] = "fully_connected";
    cands[n++] = "batch_norm";
    cands[n++] = "layer_norm";
    cands[n++] = "variable";
    for (int i = 0; i < d->n_blocks && n < 512; i++)
        cands[n++] = d->blocks[i].name;
    for (int i = 0; i < slim_registry_count(d->reg) && n < 512; i++)
        cands[n++] = slim_registry_at(d->reg, i)->name;
    const char *sug = dsl_suggest(kind, cands, n);
    if (sug)
        return dsl_fail(d->err, at, SLIM_ENOTFOUND, "unknown layer kind '%s', did you mean '%s'?",
                        kind, sug);
    return dsl_fail(d->err, at, SLIM_ENOTFOUND,
                    "unknown layer kind '%s', expected a layer (conv2d, separable_conv2d, "
                    "fully_connected, batch_norm), scope, identity, a block of this model or an "
                    "op (slimrun ops lists them; plugin ops need plugins:)",
                    kind);
}

static slim_status check_kind(dsl *d, const dnode *at, const char *kind)
{
    if (!strcmp(kind, "scope") || !strcmp(kind, "identity") || dsl_is_layer_kind(kind) ||
        dsl_block_get(d, kind) || slim_registry_find(d->reg, kind))
        return SLIM_OK;
    return unknown_kind(d, at, kind);
}

/* Check a defaults: mapping before it takes effect. */
slim_status dsl_check_defaults(dsl *d, const dnode *m)
{
    if (m->kind != DN_MAP)
        return dsl_fail(d->err, m, SLIM_ETYPE,
                        "found %s for defaults:, expected a mapping of layer kinds to keys "
                        "(conv2d: {padding: SAME})",
                        dnode_kind_str(m));
    for (int i = 0; i < m->n; i++) {
        const char *p = m->keys[i]->str;
        char kind[128];
        while (*p) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t l = strcspn(p, ", ");
            if (!l)
                break;
            if (l >= sizeof kind)
                return dsl_fail(d->err, m->keys[i], SLIM_EINVAL, "found a layer kind too long");
            memcpy(kind, p, l);
            kind[l] = 0;
            TRY(check_kind(d, m->keys[i], kind));
            p += l;
        }
        const dnode *v = m->items[i];
        if (v->kind == DN_SCALAR && !v->quoted && !v->str[0])
            continue;
        if (v->kind != DN_MAP)
            return dsl_fail(d->err, v, SLIM_ETYPE,
                            "found %s for defaults of '%s', expected a mapping of keys",
                            dnode_kind_str(v), m->keys[i]->str);
        for (int j = 0; j < v->n; j++)
            for (int r = 0; r < N_RESERVED; r++)
                if (!strcmp(v->keys[j]->str, reserved_keys[r]))
                    return dsl_fail(d->err, v->keys[j], SLIM_EINVAL,
                                    "found '%s' in defaults:, expected keys that configure a "
                                    "layer (name, inputs, repeat, stack and if belong to each "
                                    "layer)",
                                    reserved_keys[r]);
    }
    return SLIM_OK;
}

static slim_status push_defaults(dsl *d, const dsl_defaults *parent, const dnode *m,
                                 const dsl_defaults **out)
{
    *out = parent;
    if (!m || (m->kind == DN_SCALAR && !m->quoted && !m->str[0]))
        return SLIM_OK;
    TRY(dsl_check_defaults(d, m));
    dsl_defaults *df = dsl_alloc(d->arena, sizeof *df);
    if (!df)
        return dsl_fail(d->err, m, SLIM_ENOMEM, "out of memory");
    df->parent = parent;
    df->map = m;
    *out = df;
    return SLIM_OK;
}

/* ---- scopes and blocks --------------------------------------------------------- */

static slim_status build_scope(dsl *d, const seqctx *sc, const env *e, dsl_args *a,
                               const char *full, const slim_tid *in, int n_in, slim_tid *out)
{
    dsl_arg *layers = args_find(a, "layers");
    dsl_arg *defs = args_find(a, "defaults");
    dsl_arg *output = args_find(a, "output");
    if (!layers)
        return dsl_fail(
            d->err, a->at, SLIM_EINVAL,
            "found a scope without layers:, expected scope: {name: ..., layers: [...]}");
    layers->used = true;
    if (defs)
        defs->used = true;
    if (output)
        output->used = true;
    static const char *const keys[] = {"name", "inputs", "repeat",   "stack",
                                       "if",   "layers", "defaults", "output"};
    TRY(args_check_used(d, a, keys, 8));
    const dsl_defaults *df;
    TRY(push_defaults(d, sc->defs, defs ? defs->vals[0] : NULL, &df));
    return dsl_build_seq(d, e, df, full, layers->vals[0], in, n_in, output ? output->vals[0] : NULL,
                         out);
}

static slim_status build_block(dsl *d, const seqctx *sc, const env *e, const dsl_block *b,
                               dsl_args *a, const char *full, const slim_tid *in, int n_in,
                               slim_tid *out)
{
    for (int i = 0; i < d->n_active; i++)
        if (!strcmp(d->active[i], b->name)) {
            char chain[512] = "";
            size_t used = 0;
            for (int j = i; j < d->n_active && used < sizeof chain - 64; j++)
                used += (size_t)snprintf(chain + used, sizeof chain - used, "%s -> ", d->active[j]);
            snprintf(chain + used, sizeof chain - used, "%s", b->name);
            return dsl_fail(d->err, a->at, SLIM_EINVAL,
                            "found block '%s' used inside itself (%s), expected blocks that do "
                            "not form a cycle",
                            b->name, chain);
        }
    if (d->n_active == (int)(sizeof d->active / sizeof d->active[0]) ||
        d->n_active >= slim__dsl_limits.max_depth)
        return dsl_fail(d->err, a->at, SLIM_EINVAL, "found blocks nested more than %d deep",
                        d->n_active);
    /* parameters: the block's own environment, over the model's variables */
    env *be = env_new(d->arena, d->globals);
    if (!be)
        return dsl_fail(d->err, a->at, SLIM_ENOMEM, "out of memory");
    TRY(shape_vars(d, be, in[0], a->at));
    const char *accepted[80];
    int n_acc = 0;
    for (int r = 0; r < N_RESERVED; r++)
        accepted[n_acc++] = reserved_keys[r];
    for (int i = 0; b->params && i < b->params->n; i++) {
        const char *pn = b->params->keys[i]->str;
        if (n_acc < 80)
            accepted[n_acc++] = pn;
        dval v;
        const dnode *at;
        TRY(args_value(d, e, a, pn, &v, &at));
        if (!at) {
            const dnode *def = b->params->items[i];
            dsl_scalar_value(def->kind == DN_SCALAR ? def->str : "x",
                             def->kind == DN_SCALAR && def->quoted, &v);
            if (def->kind == DN_SCALAR && v.kind == DV_NULL)
                return dsl_fail(d->err, a->at, SLIM_EINVAL,
                                "found block '%s' without its parameter '%s' (declared at %d:%d "
                                "with no default), expected %s: VALUE",
                                b->name, pn, b->params->keys[i]->line, b->params->keys[i]->col, pn);
            /* a default may use the parameters before it */
            TRY(dsl_resolve(&d->ev, be, def, &v));
        }
        TRY(env_set(d->arena, be, pn, &v, d->err));
    }
    TRY(args_check_used(d, a, accepted, n_acc));
    const dsl_defaults *df;
    TRY(push_defaults(d, sc->defs, b->defaults, &df));
    d->active[d->n_active++] = b->name;
    slim_status st = dsl_build_seq(d, be, df, full, b->layers, in, n_in, b->output, out);
    d->n_active--;
    return st;
}

/* ---- one entry ------------------------------------------------------------------- */

static slim_status entry_kind(dsl *d, const dnode *item, const char **kind, const dnode **body)
{
    if (item->kind == DN_SCALAR && !item->quoted && item->str[0]) {
        *kind = item->str;
        *body = NULL;
        return SLIM_OK;
    }
    *kind = NULL;
    *body = NULL;
    if (item->kind == DN_MAP && item->n != 1)
        return dsl_fail(d->err, item, SLIM_EINVAL,
                        "found a mapping with %d keys as a layer, expected one key, the layer "
                        "kind (conv2d: {num_outputs: 64, kernel_size: 3}); are its keys indented "
                        "under the kind?",
                        item->n);
    if (item->kind != DN_MAP)
        return dsl_fail(d->err, item, SLIM_EINVAL,
                        "found %s as a layer, expected a mapping kind: {keys}",
                        dnode_kind_str(item));
    *kind = item->keys[0]->str;
    *body = item->items[0];
    if ((*body)->kind == DN_SCALAR && !(*body)->quoted && !(*body)->str[0])
        *body = NULL; /* "- flatten:" */
    else if ((*body)->kind != DN_MAP)
        return dsl_fail(d->err, *body, SLIM_ETYPE,
                        "found %s after '%s:', expected a mapping of its keys ({...})",
                        dnode_kind_str(*body), *kind);
    return SLIM_OK;
}

static slim_status dispatch(dsl *d, const seqctx *sc, const env *e, const char *kind, dsl_args *a,
                            const char *full, const slim_tid *in, int n_in, slim_tid *out)
{
    if (--d->budget < 0)
        return dsl_fail(d->err, a->at, SLIM_EINVAL,
                        "found more than %lld layers, expected a smaller model",
                        (long long)slim__dsl_limits.max_layers);
    if (!strcmp(kind, "scope"))
        return build_scope(d, sc, e, a, full, in, n_in, out);
    const dsl_block *b = dsl_block_get(d, kind);
    if (b)
        return build_block(d, sc, e, b, a, full, in, n_in, out);
    if (!strcmp(kind, "identity")) {
        TRY(args_check_used(d, a, reserved_keys, N_RESERVED));
        if (n_in != 1)
            return dsl_fail(d->err, a->at, SLIM_EINVAL,
                            "found identity with %d inputs, expected exactly one", n_in);
        *out = in[0];
        return SLIM_OK;
    }
    dsl_layer_ctx lc = {.e = e, .args = a, .name = full, .in = in, .n_in = n_in, .at = a->at};
    return dsl_layer_build(d, kind, &lc, out);
}

static slim_status unique_default(dsl *d, const char *scope, const char *base, const char **out)
{
    const char *full = join(d, scope, base);
    for (int k = 1; full && dsl_name_get(d, full); k++)
        full = dsl_printf(d->arena, "%s/%s_%d", scope, base, k);
    if (!full)
        return dsl_fail(d->err, NULL, SLIM_ENOMEM, "out of memory");
    *out = full;
    return SLIM_OK;
}

static slim_status check_name_text(dsl *d, const dnode *at, const char *name)
{
    if (!name[0] || name[0] == '/' || name[strlen(name) - 1] == '/' || strstr(name, "//") ||
        strchr(name, ':') || strchr(name, ','))
        return dsl_fail(d->err, at, SLIM_EINVAL,
                        "found the name '%s', expected letters, digits, '_', '-', '.' and '/' "
                        "between scope parts",
                        name);
    return SLIM_OK;
}

static slim_status build_entry(dsl *d, seqctx *sc, const dnode *item, slim_tid *out)
{
    const char *kind;
    const dnode *body;
    TRY(entry_kind(d, item, &kind, &body));
    const dnode *kind_at = item->kind == DN_MAP ? item->keys[0] : item;
    TRY(check_kind(d, kind_at, kind));
    slim_tid prev = sc->index ? sc->entries[sc->index - 1] : sc->inputs[0];
    *out = prev;

    dsl_args a;
    TRY(args_collect(d, kind, kind_at, NULL, body, sc->defs, &a));
    for (int r = 0; r < N_RESERVED; r++)
        args_mark_used(&a, reserved_keys[r]);

    /* inputs, before the condition so that it can look at shapes */
    slim_tid in[SLIM_MAX_INPUTS];
    int n_in = 1;
    in[0] = prev;
    slim_status in_st = SLIM_OK;
    dsl_arg *ia = args_find(&a, "inputs");
    if (ia) {
        const dnode *iv = ia->vals[0];
        if (iv->kind == DN_SEQ) {
            if (iv->n == 0 || iv->n > SLIM_MAX_INPUTS)
                return dsl_fail(d->err, iv, SLIM_EINVAL, "found %d inputs, expected 1 to %d", iv->n,
                                SLIM_MAX_INPUTS);
            n_in = iv->n;
            for (int i = 0; i < n_in && in_st == SLIM_OK; i++)
                in_st = resolve_ref(d, sc, sc->e, iv->items[i], &in[i]);
        } else if (iv->kind == DN_SCALAR) {
            in_st = resolve_ref(d, sc, sc->e, iv, &in[0]);
        } else {
            return dsl_fail(d->err, iv, SLIM_ETYPE,
                            "found %s for inputs, expected a layer name, -1, or a list of them",
                            dnode_kind_str(iv));
        }
    }
    env *le = env_new(d->arena, sc->e);
    if (!le)
        return dsl_fail(d->err, item, SLIM_ENOMEM, "out of memory");
    if (in_st == SLIM_OK)
        TRY(shape_vars(d, le, in[0], item));

    dsl_arg *ifa = args_find(&a, "if");
    if (ifa) {
        dval v;
        slim_status st = dsl_resolve(&d->ev, le, ifa->vals[0], &v);
        if (st != SLIM_OK)
            return in_st != SLIM_OK ? in_st : st;
        if (v.kind != DV_BOOL)
            return dsl_fail(d->err, ifa->vals[0], SLIM_ETYPE,
                            "found %s '%s' for if, expected true or false (an expression like "
                            "$stride > 1)",
                            dval_kind_str(&v), dval_str(d->arena, &v));
        if (!v.b)
            return SLIM_OK; /* skipped: the flow passes through */
    }
    if (in_st != SLIM_OK)
        return in_st;

    /* repeat / stack */
    int64_t count = 1;
    dsl_arg *ra = args_find(&a, "repeat"), *sa = args_find(&a, "stack");
    const dnode *stack = NULL;
    if (ra && sa)
        return dsl_fail(d->err, sa->keynode, SLIM_EINVAL,
                        "found both repeat and stack, expected one of them");
    if (ra) {
        dval v;
        TRY(dsl_resolve(&d->ev, le, ra->vals[0], &v));
        if (v.kind != DV_INT || v.i < 1 || v.i > 10000)
            return dsl_fail(d->err, ra->vals[0], SLIM_EINVAL,
                            "found %s '%s' for repeat, expected an integer in [1, 10000]",
                            dval_kind_str(&v), dval_str(d->arena, &v));
        count = v.i;
    }
    if (sa) {
        stack = sa->vals[0];
        if (stack->kind != DN_SEQ || stack->n == 0)
            return dsl_fail(d->err, stack, SLIM_ETYPE,
                            "found %s for stack, expected a non-empty list of mappings, one per "
                            "layer ([{num_outputs: 32}, {num_outputs: 64}])",
                            stack->kind == DN_SEQ ? "an empty list" : dnode_kind_str(stack));
        for (int i = 0; i < stack->n; i++)
            if (stack->items[i]->kind != DN_MAP)
                return dsl_fail(d->err, stack->items[i], SLIM_ETYPE,
                                "found %s in stack, expected a mapping of the keys that change",
                                dnode_kind_str(stack->items[i]));
        count = stack->n;
    }
    bool multi = ra || sa;

    /* names */
    dsl_arg *na = args_find(&a, "name");
    const dnode *name_at = na ? na->vals[0] : kind_at;
    bool templ = na && na->vals[0]->kind == DN_SCALAR && strstr(na->vals[0]->str, "${");
    const char *base = NULL, *group = NULL;
    bool anonymous = false;
    if (na && !templ) {
        dval v;
        TRY(dsl_resolve(&d->ev, le, na->vals[0], &v));
        if (v.kind != DV_STR && v.kind != DV_INT)
            return dsl_fail(d->err, na->vals[0], SLIM_ETYPE, "found %s for name, expected text",
                            dval_kind_str(&v));
        base = v.kind == DV_STR ? v.s : dval_str(d->arena, &v);
        TRY(check_name_text(d, na->vals[0], base));
        group = join(d, sc->scope, base);
    } else if (!na && !strcmp(kind, "scope")) {
        /* a group without a name: its defaults: and layers, in the current scope */
        anonymous = true;
        group = sc->scope;
        base = "";
    } else if (!na) {
        TRY(unique_default(d, sc->scope, default_name(d, kind), &group));
        base = strrchr(group, '/') ? strrchr(group, '/') + 1 : group;
    }

    slim_tid cur[SLIM_MAX_INPUTS];
    memcpy(cur, in, (size_t)n_in * sizeof *in);
    int n_cur = n_in;
    for (int64_t r = 0; r < count; r++) {
        env *re = le;
        if (multi) {
            re = env_new(d->arena, le);
            if (!re)
                return dsl_fail(d->err, item, SLIM_ENOMEM, "out of memory");
            dval iv = {.kind = DV_INT, .i = r + 1, .at = item};
            TRY(env_set(d->arena, re, "index", &iv, d->err));
            if (r > 0)
                TRY(shape_vars(d, re, cur[0], item));
        }
        const char *full;
        if (templ) {
            dval v;
            TRY(dsl_resolve(&d->ev, re, na->vals[0], &v));
            if (v.kind != DV_STR)
                return dsl_fail(d->err, na->vals[0], SLIM_ETYPE, "found %s for name, expected text",
                                dval_kind_str(&v));
            TRY(check_name_text(d, na->vals[0], v.s));
            full = join(d, sc->scope, v.s);
        } else if (anonymous) {
            full = group;
        } else if (multi) {
            full = dsl_printf(d->arena, "%s/%s_%lld", group, base, (long long)r + 1);
        } else {
            full = group;
        }
        if (!full)
            return dsl_fail(d->err, item, SLIM_ENOMEM, "out of memory");
        dsl_args ra_args = a;
        if (stack || r > 0) {
            TRY(args_collect(d, kind, kind_at, stack ? stack->items[r] : NULL, body, sc->defs,
                             &ra_args));
            for (int k = 0; k < N_RESERVED; k++)
                args_mark_used(&ra_args, reserved_keys[k]);
        }
        /* a name taken already: say so before anything is built under it */
        const dsl_name *taken = anonymous ? NULL : dsl_name_get(d, full);
        if (taken)
            return dsl_name_add(d, full, -1, name_at);
        slim_tid o;
        TRY(dispatch(d, sc, re, kind, &ra_args, full, cur, n_cur, &o));
        if (!anonymous)
            TRY(dsl_name_add(d, full, o, name_at));
        cur[0] = o;
        n_cur = 1;
        *out = o;
    }
    if (multi && !templ && !anonymous)
        TRY(dsl_name_add(d, group, *out, name_at));
    return SLIM_OK;
}

slim_status dsl_lookup(dsl *d, const env *e, const char *scope, const dnode *ref, slim_tid input,
                       slim_tid *out)
{
    seqctx sc = {.e = e, .scope = scope, .inputs = &input, .n_inputs = 1};
    return resolve_ref(d, &sc, e, ref, out);
}

slim_status dsl_build_seq(dsl *d, const env *e, const dsl_defaults *defs, const char *scope,
                          const dnode *seq, const slim_tid *inputs, int n_inputs,
                          const dnode *output, slim_tid *out)
{
    if (!seq || seq->kind != DN_SEQ || seq->n == 0)
        return dsl_fail(
            d->err, seq, SLIM_ETYPE,
            "found %s for layers, expected a non-empty list of layers (- conv2d: {...})",
            seq && seq->kind == DN_SEQ ? "an empty list" : dnode_kind_str(seq));
    seqctx sc = {
        .e = e, .defs = defs, .scope = scope, .inputs = inputs, .n_inputs = n_inputs, .seq = seq};
    sc.entries = dsl_alloc(d->arena, (size_t)seq->n * sizeof *sc.entries);
    if (!sc.entries)
        return dsl_fail(d->err, seq, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < seq->n; i++) {
        sc.index = i;
        TRY(build_entry(d, &sc, seq->items[i], &sc.entries[i]));
        sc.n_entries = i + 1;
    }
    *out = sc.entries[seq->n - 1];
    if (output) {
        sc.index = seq->n;
        return resolve_ref(d, &sc, e, output, out);
    }
    return SLIM_OK;
}
