/* tests/engine/test_rewrite.c - the compiler's rewrite pass through the public
 * fusion API (<slim/op.h>): a caller's rule applies after the built-in ones;
 * the engine refuses what breaks a pattern's shape (taking in a node that is
 * not a single-reader neighbour, leaving a node reading a tensor nothing
 * computes, an input computed later, a bad attribute), never fuses across a
 * kept tensor, and checks registrations. TAP output. */
#include "../ops/harness.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* relu(relu(x)) is relu(x): a relu takes in the relus after it. */
static slim_status relu_twice(slim_fuse_ctx *c)
{
    int m;
    slim_status st = SLIM_OK;
    while (st == SLIM_OK && (m = c->consumer(c, c->node, NULL)) >= 0 &&
           !strcmp(c->op(c, m), "relu"))
        st = c->absorb(c, c->node, m);
    return st || !c->taken(c, c->node) ? st : c->set_label(c, c->node, "relu+relu");
}

/* Wrong on purpose: the first relu takes in the last, which reads the second. */
static slim_status far_node(slim_fuse_ctx *c)
{
    return c->node == 0 ? c->absorb(c, 0, 2) : SLIM_OK;
}

/* Wrong on purpose: takes in its producer and keeps reading its output. */
static slim_status keep_reading(slim_fuse_ctx *c)
{
    int p = c->producer(c, c->node, 0);
    return p >= 0 ? c->absorb(c, c->node, p) : SLIM_OK;
}

/* Wrong on purpose: the first relu takes the last node's output as an input. */
static slim_status later_input(slim_fuse_ctx *c)
{
    return c->node == 0 ? c->add_input(c, 0, 2, 0) : SLIM_OK;
}

/* Wrong on purpose: an activation leaky_relu does not have. */
static slim_status bad_attr(slim_fuse_ctx *c)
{
    return c->set_attr(c, c->node, "alpha", "fast");
}

#define RULE(fn, anchor_)                                                                          \
    {                                                                                              \
        .struct_size = sizeof(slim_fusion_desc), .name = #fn, .anchor = anchor_, .apply = fn       \
    }

static const slim_fusion_desc r_relu_twice = RULE(relu_twice, "relu"),
                              r_far = RULE(far_node, "relu"), r_keep = RULE(keep_reading, "relu"),
                              r_later = RULE(later_input, "relu"),
                              r_bad_attr = RULE(bad_attr, "leaky_relu");

/* x (2,3) -> op a -> op b -> op c; marks c (and b when keep). Compiles for
 * inference with rule f added; fills steps and the output of x = i - 2.5. */
static slim_status run(const slim_fusion_desc *f, const char *ops[3], bool keep, int *steps,
                       const char **op0, float *y, slim_error *err)
{
    slim_registry *reg;
    slim_graph *g = NULL;
    slim_program *p = NULL;
    slim_status st = slim_registry_new(&reg, err);
    if (st == SLIM_OK)
        st = slim_registry_add_fusion(reg, f, err);
    if (st == SLIM_OK)
        st = slim_graph_new(reg, &g, err);
    slim_tid t[4];
    if (st == SLIM_OK)
        st = slim_graph_input(g, "x", SLIM_F32, &(slim_shape){2, {2, 3}}, &t[0], err);
    static const char *const names[3] = {"a", "b", "c"};
    for (int k = 0; k < 3 && st == SLIM_OK; k++)
        st = slim_graph_add(g, ops[k], names[k], &t[k], 1, NULL, &t[k + 1], 1, NULL, err);
    if (st == SLIM_OK)
        st = slim_graph_mark_output(g, t[3], err);
    if (st == SLIM_OK && keep)
        st = slim_graph_mark_output(g, t[2], err);
    if (st == SLIM_OK)
        st = slim_graph_compile(g, &(slim_compile_opts){0}, &p, err);
    slim_tensor in, out;
    if (st == SLIM_OK && (st = slim_program_input(p, "x", &in, err)) == SLIM_OK) {
        for (int i = 0; i < 6; i++)
            ((float *)in.data)[i] = (float)i - 2.5f;
        st = slim_program_run(p, &(slim_run_opts){0}, err);
    }
    if (st == SLIM_OK && (st = slim_program_output(p, "c", &out, err)) == SLIM_OK) {
        memcpy(y, out.data, 6 * sizeof(float));
        const slim_node_time *times;
        *steps = slim_program_times(p, &times);
        static char op[64];
        snprintf(op, sizeof op, "%s", times[0].op);
        *op0 = op;
    }
    slim_program_free(p);
    slim_graph_free(g);
    slim_registry_free(reg);
    return st;
}

static void expect_error(const slim_fusion_desc *f, const char *ops[3], const char *want,
                         const char *what)
{
    slim_error err = {0};
    int steps;
    const char *op;
    float y[6];
    slim_status st = run(f, ops, false, &steps, &op, y, &err);
    bool ok = st != SLIM_OK && strstr(err.msg, want) && strstr(err.msg, f->name);
    harness_ok(ok, "%s is refused: %s", what, err.msg);
}

static void registrations(void)
{
    slim_registry *reg;
    slim_error err = {0};
    slim_registry_new(&reg, &err);
    int n = slim_registry_fusion_count(reg);
    harness_ok(n >= 2 && !strcmp(slim_registry_fusion_at(reg, 0)->name, "conv2d_post") &&
                   !strcmp(slim_registry_fusion_at(reg, 1)->name, "conv2d_chain"),
               "the built-in rules, in order: conv2d_post, conv2d_chain (%d)", n);
    slim_fusion_desc f = RULE(relu_twice, "relu");
    f.name = "conv2d_post";
    slim_status st = slim_registry_add_fusion(reg, &f, &err);
    harness_ok(st == SLIM_EEXIST && strstr(err.msg, "already registered (from built-in)"),
               "a second rule of a name is refused: %s", err.msg);
    f = r_relu_twice;
    f.struct_size = 8;
    st = slim_registry_add_fusion(reg, &f, &err);
    harness_ok(st == SLIM_EABI && strstr(err.msg, "has size 8"),
               "a rule built against another header is refused: %s", err.msg);
    f = r_relu_twice;
    f.apply = NULL;
    st = slim_registry_add_fusion(reg, &f, &err);
    harness_ok(st == SLIM_EINVAL && strstr(err.msg, "lacks apply"), "a rule without apply: %s",
               err.msg);
    f = r_relu_twice;
    f.name = "Relu Twice";
    st = slim_registry_add_fusion(reg, &f, &err);
    harness_ok(st == SLIM_EINVAL && strstr(err.msg, "lower-case"), "a rule's bad name: %s",
               err.msg);
    harness_ok(slim_registry_fusion_count(reg) == n, "refused rules leave the registry as it was");
    slim_registry_free(reg);
}

int main(void)
{
    registrations();
    const char *relus[3] = {"relu", "relu", "relu"};
    slim_error err = {0};
    int steps = 0;
    const char *op = "";
    float y[6];
    slim_status st = run(&r_relu_twice, relus, false, &steps, &op, y, &err);
    bool right = st == SLIM_OK;
    for (int i = 0; i < 6 && right; i++)
        right = y[i] == fmaxf(0, (float)i - 2.5f);
    harness_ok(right && steps == 1 && !strcmp(op, "relu+relu"),
               "a caller's rule takes relu, relu, relu into one step (%d, %s), same values%s%s",
               steps, op, st ? ": " : "", st ? err.msg : "");
    st = run(&r_relu_twice, relus, true, &steps, &op, y, &err);
    harness_ok(st == SLIM_OK && steps == 2,
               "nothing is taken in across a kept tensor (b marked): %d steps", steps);
    expect_error(&r_far, relus, "cannot take in", "taking in a node that is not a neighbour");
    expect_error(&r_keep, relus, "(a rule bug)", "reading the output of a node taken in");
    expect_error(&r_later, relus, "not computed", "an input computed after the node");
    const char *leaky[3] = {"leaky_relu", "relu", "relu"};
    expect_error(&r_bad_attr, leaky, "alpha", "an attribute value the schema refuses");
    printf("1..%d\n", harness_count());
    return harness_failures() ? 1 : 0;
}
