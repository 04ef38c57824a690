/* engine/rewrite.c - the rewrite pass: in inference, the registry's fusion
 * rules (<slim/op.h>, ops/ops.def) rewrite the node table, each rule once
 * over the live nodes of its anchor op, in graph order. The engine keeps
 * the pattern's shape (single-reader links that no caller reads) and the
 * bookkeeping (who reads and writes each tensor); the rules, in ops/, pick
 * the ops and build the fused node. */
#include "engine/compile.h"
#include "core/error.h"

#include <stdlib.h>
#include <string.h>

typedef struct rw {
    slim_fuse_ctx c;
    slim__build *b;
    const slim_fusion_desc *rule;
    int *uses;   /* per tensor: inputs of live nodes that read it */
    int *writer; /* per tensor: the live node that writes it, or -1 */
} rw;

static rw *RW(const slim_fuse_ctx *c)
{
    return c->priv;
}

/* Node n of the table, or NULL when out of range. */
static slim__cnode *node_at(const slim_fuse_ctx *c, int n)
{
    const slim__build *b = RW(c)->b;
    return n >= 0 && n < b->g->n_nodes ? &b->nodes[n] : NULL;
}

static slim__cnode *live_at(const slim_fuse_ctx *c, int n)
{
    slim__cnode *nd = node_at(c, n);
    return nd && nd->live ? nd : NULL;
}

static const slim__tinfo *tensor(const slim_fuse_ctx *c, slim_tid t)
{
    return &RW(c)->b->g->tensors[t];
}

/* ---- reading -------------------------------------------------------------- */

static const char *f_op(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? nd->d->name : NULL;
}

static const slim_op_desc *f_desc(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? nd->d : NULL;
}

static const char *f_name(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? nd->name : NULL;
}

static int f_taken(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? nd->taken : -1;
}

static int f_n_inputs(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? nd->n_in : -1;
}

static int f_input_id(const slim_fuse_ctx *c, int n, int i)
{
    const slim__cnode *nd = node_at(c, n);
    return nd && i >= 0 && i < nd->n_in ? nd->in[i] : -1;
}

static const slim_tensor_desc *f_input(const slim_fuse_ctx *c, int n, int i)
{
    int t = f_input_id(c, n, i);
    return t >= 0 ? &tensor(c, t)->d : NULL;
}

static const slim_tensor_desc *f_output(const slim_fuse_ctx *c, int n)
{
    const slim__cnode *nd = node_at(c, n);
    return nd ? &tensor(c, nd->out[0])->d : NULL;
}

static const slim__attr_value *attr(const slim_fuse_ctx *c, int n, const char *name)
{
    const slim__cnode *nd = node_at(c, n);
    return nd && name ? slim__attrs_get(&nd->attrs, name) : NULL;
}

static int64_t f_attr_int(const slim_fuse_ctx *c, int n, const char *name)
{
    const slim__attr_value *v = attr(c, n, name);
    return v && (v->type == SLIM_ATTR_INT || v->type == SLIM_ATTR_BOOL) ? v->ints[0] : 0;
}

static double f_attr_float(const slim_fuse_ctx *c, int n, const char *name)
{
    const slim__attr_value *v = attr(c, n, name);
    return v && v->type == SLIM_ATTR_FLOAT ? v->floats[0] : 0;
}

static const char *f_attr_str(const slim_fuse_ctx *c, int n, const char *name)
{
    const slim__attr_value *v = attr(c, n, name);
    return v && v->type == SLIM_ATTR_STRING ? v->str : NULL;
}

static int f_attr_ints(const slim_fuse_ctx *c, int n, const char *name, const int64_t **vals)
{
    const slim__attr_value *v = attr(c, n, name);
    *vals = v && v->ints ? v->ints : NULL;
    return *vals ? v->n : -1;
}

/* ---- the pattern's shape -------------------------------------------------- */

/* Whether t links two nodes that may become one: no caller reads it (marked
 * outputs and the loss are marked) and one input of a live node reads it. */
static bool single_link(const slim_fuse_ctx *c, slim_tid t)
{
    return !tensor(c, t)->marked && RW(c)->uses[t] == 1;
}

static int f_consumer(const slim_fuse_ctx *c, int n, int *input)
{
    const slim__cnode *nd = live_at(c, n);
    if (!nd || nd->n_out != 1 || !single_link(c, nd->out[0]))
        return -1;
    const slim__build *b = RW(c)->b;
    for (int m = 0; m < b->g->n_nodes; m++)
        for (int i = 0; b->nodes[m].live && i < b->nodes[m].n_in; i++)
            if (b->nodes[m].in[i] == nd->out[0]) {
                if (input)
                    *input = i;
                return m;
            }
    return -1;
}

static int f_producer(const slim_fuse_ctx *c, int n, int i)
{
    int t = live_at(c, n) ? f_input_id(c, n, i) : -1;
    int w = t >= 0 && single_link(c, t) ? RW(c)->writer[t] : -1;
    return w >= 0 && RW(c)->b->nodes[w].n_out == 1 ? w : -1;
}

static bool f_ready(const slim_fuse_ctx *c, int of, int i, int at)
{
    int t = f_input_id(c, of, i);
    if (t < 0)
        return false;
    const slim__tinfo *ti = tensor(c, t);
    return ti->kind != SLIM__T_NODE || ti->producer < at;
}

/* ---- rewriting ------------------------------------------------------------ */

static slim_status fail(const slim_fuse_ctx *c, const char *fmt, ...) SLIM_PRINTF(2, 3);
static slim_status fail(const slim_fuse_ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    slim_status st = slim__verror(RW(c)->b->err, SLIM_EINVAL, fmt, ap);
    va_end(ap);
    return st;
}

/* Count node n's reads of its inputs in (by) or out. */
static void count_reads(const slim_fuse_ctx *c, const slim__cnode *nd, int by)
{
    for (int i = 0; i < nd->n_in; i++)
        RW(c)->uses[nd->in[i]] += by;
}

static slim_status f_absorb(slim_fuse_ctx *c, int n, int other)
{
    slim__cnode *nd = live_at(c, n), *od = live_at(c, other);
    rw *r = RW(c);
    if (!nd || !od || n == other)
        return fail(c, "node %d cannot take in node %d: both must be live and apart", n, other);
    int slot;
    const bool consumer = f_consumer(c, n, &slot) == other;
    bool producer = false;
    for (int i = 0; i < nd->n_in && !consumer && !producer; i++)
        producer = f_producer(c, n, i) == other;
    if (!consumer && !producer)
        return fail(c,
                    "node '%s' cannot take in node '%s': it is neither the only reader of its "
                    "output nor the only writer of an input it alone reads",
                    nd->name, od->name);
    count_reads(c, od, -1);
    for (int j = 0; j < od->n_out; j++)
        r->writer[od->out[j]] = -1;
    if (consumer) {
        r->writer[nd->out[0]] = -1;
        nd->n_out = od->n_out;
        memcpy(nd->out, od->out, (size_t)od->n_out * sizeof *nd->out);
        for (int j = 0; j < nd->n_out; j++)
            r->writer[nd->out[j]] = n;
    }
    od->live = false;
    nd->taken += 1 + od->taken;
    return SLIM_OK;
}

/* Whether tensor t is there when node n runs: a graph input, a parameter,
 * or written by a live node before n. */
static bool available(const slim_fuse_ctx *c, slim_tid t, int n)
{
    int w = RW(c)->writer[t];
    return tensor(c, t)->kind != SLIM__T_NODE || (w >= 0 && w < n);
}

static slim_status f_set_inputs(slim_fuse_ctx *c, int n, int k, const slim_fuse_input *in)
{
    slim__cnode *nd = live_at(c, n);
    if (!nd || k < 0 || k > SLIM_MAX_INPUTS)
        return fail(c, "set_inputs: node %d is not live, or %d inputs are too many", n, k);
    slim_tid t[SLIM_MAX_INPUTS];
    for (int i = 0; i < k; i++) {
        t[i] = f_input_id(c, in[i].node, in[i].input);
        if (t[i] < 0 || !available(c, t[i], n))
            return fail(c, "node '%s' cannot take input %d of node %d: %s before it runs", nd->name,
                        in[i].input, in[i].node, t[i] < 0 ? "no such input" : "not computed");
    }
    count_reads(c, nd, -1);
    nd->n_in = k;
    memcpy(nd->in, t, (size_t)k * sizeof *t);
    count_reads(c, nd, +1);
    return SLIM_OK;
}

static slim_status f_add_input(slim_fuse_ctx *c, int n, int from, int i)
{
    const slim__cnode *nd = live_at(c, n);
    slim_fuse_input in[SLIM_MAX_INPUTS + 1];
    int k = nd ? nd->n_in : 0;
    for (int j = 0; j < k; j++)
        in[j] = (slim_fuse_input){n, j};
    in[k] = (slim_fuse_input){from, i};
    return f_set_inputs(c, n, k + 1, in);
}

/* Node n's attributes, its own to change. */
static slim_status own_attrs(const slim_fuse_ctx *c, slim__cnode *nd)
{
    if (nd->owns_attrs)
        return SLIM_OK;
    slim__attr_set set;
    if (slim__attrs_copy(&nd->attrs, nd->d, &set) != SLIM_OK)
        return slim__oom(RW(c)->b->err);
    nd->attrs = set;
    nd->owns_attrs = true;
    return SLIM_OK;
}

static slim_status f_set_op(slim_fuse_ctx *c, int n, const char *op)
{
    slim__cnode *nd = live_at(c, n);
    const slim_op_desc *d = slim_registry_find(RW(c)->b->g->reg, op);
    if (!nd || !d)
        return fail(c, "set_op: %s", nd ? "no such op" : "the node is not live");
    slim__attr_set set;
    if (slim__attrs_copy(&nd->attrs, d, &set) != SLIM_OK)
        return fail(c,
                    "node '%s' cannot run %s: out of memory, or %s has a required attribute "
                    "%s has not",
                    nd->name, op, op, nd->d->name);
    if (nd->owns_attrs)
        slim__attrs_fini(&nd->attrs);
    nd->attrs = set;
    nd->owns_attrs = true;
    nd->d = d;
    nd->label = NULL;
    return SLIM_OK;
}

static slim_status f_set_attr(slim_fuse_ctx *c, int n, const char *name, const char *text)
{
    slim__cnode *nd = live_at(c, n);
    if (!nd || !name || !text)
        return fail(c, "set_attr: node %d is not live, or no name or value", n);
    slim_status st = own_attrs(c, nd);
    return st ? st : slim__attrs_set_text(&nd->attrs, name, text, RW(c)->b->err);
}

static slim_status f_copy_attr(slim_fuse_ctx *c, int n, const char *name, int from,
                               const char *from_name)
{
    slim__cnode *nd = live_at(c, n);
    const slim__cnode *fd = node_at(c, from);
    if (!nd || !fd || !name || !from_name)
        return fail(c, "copy_attr: node %d is not live, or no node %d", n, from);
    slim_status st = own_attrs(c, nd);
    return st ? st : slim__attrs_set_from(&nd->attrs, name, &fd->attrs, from_name, RW(c)->b->err);
}

static slim_status set_text(slim_fuse_ctx *c, int n, const char *text, bool label)
{
    slim__cnode *nd = live_at(c, n);
    if (!nd || !text)
        return fail(c, "set_%s: node %d is not live, or no text", label ? "label" : "name", n);
    const char *s = slim__keep(RW(c)->b->p, strdup(text));
    if (!s)
        return slim__oom(RW(c)->b->err);
    *(label ? &nd->label : &nd->name) = s;
    return SLIM_OK;
}

static slim_status f_set_name(slim_fuse_ctx *c, int n, const char *name)
{
    return set_text(c, n, name, false);
}

static slim_status f_set_label(slim_fuse_ctx *c, int n, const char *label)
{
    return set_text(c, n, label, true);
}

/* ---- the pass ------------------------------------------------------------- */

/* Every input of every live node computed before it runs. */
static slim_status check_inputs(rw *r)
{
    const slim__build *b = r->b;
    for (int n = 0; n < b->g->n_nodes; n++)
        for (int i = 0; b->nodes[n].live && i < b->nodes[n].n_in; i++)
            if (!available(&r->c, b->nodes[n].in[i], n))
                return slim__error(b->err, SLIM_EINTERNAL,
                                   "fusion rule %s left node '%s' reading '%s', which no step "
                                   "before it computes (a rule bug)",
                                   r->rule->name, b->nodes[n].name,
                                   b->g->tensors[b->nodes[n].in[i]].name);
    return SLIM_OK;
}

slim_status slim__rewrite(slim__build *b)
{
    const slim_registry *reg = b->g->reg;
    if (b->p->training || b->o->no_fusion || slim_registry_fusion_count(reg) == 0)
        return SLIM_OK;
    int nn = b->g->n_nodes, nt = b->g->n_tensors;
    rw r = {.b = b,
            .c = {.reference = slim__force_ref(),
                  .op = f_op,
                  .desc = f_desc,
                  .name = f_name,
                  .taken = f_taken,
                  .n_inputs = f_n_inputs,
                  .input = f_input,
                  .input_id = f_input_id,
                  .output = f_output,
                  .attr_int = f_attr_int,
                  .attr_float = f_attr_float,
                  .attr_str = f_attr_str,
                  .attr_ints = f_attr_ints,
                  .consumer = f_consumer,
                  .producer = f_producer,
                  .ready = f_ready,
                  .absorb = f_absorb,
                  .add_input = f_add_input,
                  .set_inputs = f_set_inputs,
                  .set_op = f_set_op,
                  .set_attr = f_set_attr,
                  .copy_attr = f_copy_attr,
                  .set_name = f_set_name,
                  .set_label = f_set_label}};
    r.c.priv = &r;
    r.uses = calloc((size_t)nt + 1, sizeof *r.uses);
    r.writer = malloc(((size_t)nt + 1) * sizeof *r.writer);
    slim_status st = r.uses && r.writer ? SLIM_OK : slim__oom(b->err);
    for (int t = 0; st == SLIM_OK && t < nt; t++)
        r.writer[t] = -1;
    for (int n = 0; st == SLIM_OK && n < nn; n++) {
        const slim__cnode *nd = &b->nodes[n];
        for (int j = 0; nd->live && j < nd->n_out; j++)
            r.writer[nd->out[j]] = n;
        count_reads(&r.c, nd, nd->live);
    }
    for (int k = 0; st == SLIM_OK && k < slim_registry_fusion_count(reg); k++) {
        r.rule = slim_registry_fusion_at(reg, k);
        for (int n = 0; st == SLIM_OK && n < nn; n++) {
            if (!b->nodes[n].live || strcmp(b->nodes[n].d->name, r.rule->anchor) != 0)
                continue;
            r.c.node = n;
            st = r.rule->apply(&r.c);
            if (st != SLIM_OK)
                slim__error_prefix(b->err, "fusion rule %s at node '%s': ", r.rule->name,
                                   b->nodes[n].name);
        }
        if (st == SLIM_OK)
            st = check_inputs(&r);
    }
    free(r.uses);
    free(r.writer);
    return st;
}
