/* tests/engine/test_plugin.c - load the example plugin, run and grad-check its
 * op, use it in a graph, see its fusion rule rewrite x * sigmoid(x), and
 * check the loader's message for each failure. */
#include "../ops/harness.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *plugin_path(const char *name, char *buf, size_t n)
{
    const char *b = getenv("top_builddir");
    snprintf(buf, n, "%s/plugins/.libs/%s.so", b ? b : ".", name);
    return buf;
}

static void expect_fail(slim_registry *reg, const char *name, slim_status code, const char *needle)
{
    char path[512];
    slim_error err = {0};
    slim_status st = slim_registry_load_plugin(reg, plugin_path(name, path, sizeof path), &err);
    bool ok = st == code && strstr(err.msg, needle) != NULL;
    harness_ok(ok, "plugin %s is refused with a message naming '%s'", name, needle);
    if (!ok)
        harness_diag("status %d (%s), message: %s", st, slim_status_str(st), err.msg);
}

/* The plugin's fusion rule: y = x * sigmoid(x) (either operand order) runs
 * as one swish step in inference, with the values of the two nodes; not
 * when the sigmoid's output is kept, nor with no_fusion. */
static void fused_swish(slim_registry *reg)
{
    const slim_fusion_desc *f = slim_registry_fusion_at(reg, slim_registry_fusion_count(reg) - 1);
    harness_ok(f && !strcmp(f->name, "swish_from_sigmoid") && !strcmp(f->anchor, "sigmoid"),
               "the plugin registered its fusion rule after the %d built-in ones",
               slim_registry_fusion_count(reg) - 1);
    for (int v = 0; v < 4; v++) {
        const bool swap = v & 1, keep = v == 2, no_fusion = v == 3;
        slim_error err = {0};
        slim_graph *g;
        slim_graph_new(reg, &g, &err);
        slim_tid x, s, y;
        slim_graph_input(g, "x", SLIM_F32, &(slim_shape){2, {2, 3}}, &x, &err);
        slim_graph_add(g, "sigmoid", "sig", &x, 1, NULL, &s, 1, NULL, &err);
        slim_tid in[2] = {swap ? s : x, swap ? x : s};
        slim_status st = slim_graph_add(g, "multiply", "mul", in, 2, NULL, &y, 1, NULL, &err);
        slim_graph_mark_output(g, y, &err);
        if (keep)
            slim_graph_mark_output(g, s, &err);
        slim_program *p = NULL;
        if (st == SLIM_OK)
            st = slim_graph_compile(g, &(slim_compile_opts){.no_fusion = no_fusion}, &p, &err);
        const slim_node_time *t = NULL;
        int n = st == SLIM_OK ? slim_program_times(p, &t) : 0;
        slim_tensor xin, out;
        double worst = 1;
        if (st == SLIM_OK && slim_program_input(p, "x", &xin, &err) == SLIM_OK) {
            for (int i = 0; i < 6; i++)
                ((float *)xin.data)[i] = (float)i - 2.5f;
            slim_program_run(p, &(slim_run_opts){0}, &err);
            slim_program_output(p, "mul", &out, &err);
            worst = 0;
            for (int i = 0; i < 6; i++) {
                double xi = i - 2.5, want = xi / (1 + exp(-xi));
                worst = fmax(worst, fabs(((float *)out.data)[i] - want));
            }
        }
        const bool fused = n == 1 && !strcmp(t[0].op, "swish") && !strcmp(t[0].name, "sig");
        static const char *const what[4] = {"x * sigmoid(x)", "sigmoid(x) * x",
                                            "with the sigmoid's output kept", "with no_fusion"};
        harness_ok(st == SLIM_OK && fused == (v < 2) && n == (v < 2 ? 1 : 2) && worst < 1e-6,
                   "inference %s: %d step%s (%s), max error %.2g", what[v], n, n == 1 ? "" : "s",
                   n ? t[0].op : "-", worst);
        slim_program_free(p);
        slim_graph_free(g);
    }
}

int main(void)
{
    slim_registry *reg;
    slim_error err = {0};
    if (slim_registry_new(&reg, &err) != SLIM_OK) {
        printf("Bail out! %s\n", err.msg);
        return 1;
    }
    int before = slim_registry_count(reg);
    harness_ok(slim_registry_find(reg, NULL) == NULL &&
                   slim_registry_find(reg, "no_such_op") == NULL,
               "looking up no name or an unknown one finds nothing");
    char path[512];
    slim_status st = slim_registry_load_plugin(reg, plugin_path("swish", path, sizeof path), &err);
    harness_ok(st == SLIM_OK, "load the swish plugin%s%s", st ? ": " : "", st ? err.msg : "");
    harness_ok(slim_registry_find(reg, "swish") != NULL && slim_registry_count(reg) == before + 1,
               "swish is registered beside the %d built-in ops", before);

    /* forward, reference, finite differences through the generic harness */
    harness_case cases[] = {
        {.name = "beta1",
         .op = "swish",
         .n_in = 1,
         .in = {{.rank = 2, .dim = {3, 5}, .lo = -3, .hi = 3}}},
        {.name = "beta2_nhwc",
         .op = "swish",
         .attrs = "beta=2.5",
         .n_in = 1,
         .in = {{.rank = 4, .dim = {1, 3, 3, 7}, .lo = -2, .hi = 2}}},
        {.name = "known",
         .op = "swish",
         .n_in = 1,
         .in = {{.rank = 1, .dim = {3}, .values = (const float[]){0.0f, 1.0f, -2.0f}}},
         /* x * sigmoid(x): 0, 0.7310586, -2*0.1192029 */
         .expect = (const float[]){0.0f, 0.73105858f, -0.23840584f},
         .fwd_tol = 1e-6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        harness_run(reg, &cases[i]);

    /* used in a graph like any built-in op, with an unknown attribute refused */
    slim_graph *g;
    slim_graph_new(reg, &g, &err);
    slim_tid x, y;
    slim_shape s = {2, {2, 3}};
    slim_graph_input(g, "x", SLIM_F32, &s, &x, &err);
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_float(a, "bet", 2.0);
    st = slim_graph_add(g, "swish", "gate", &x, 1, a, &y, 1, NULL, &err);
    harness_ok(st != SLIM_OK && strstr(err.msg, "unknown attribute 'bet'") &&
                   strstr(err.msg, "beta"),
               "an unknown plugin attribute is refused naming the expected ones");
    slim_attrs_free(a);
    st = slim_graph_add(g, "swish", "gate", &x, 1, NULL, &y, 1, NULL, &err);
    slim_graph_mark_output(g, y, &err);
    slim_program *p = NULL;
    if (st == SLIM_OK)
        st = slim_graph_compile(g, &(slim_compile_opts){.num_threads = 2}, &p, &err);
    slim_tensor in, out;
    if (st == SLIM_OK && slim_program_input(p, "x", &in, &err) == SLIM_OK) {
        for (int i = 0; i < 6; i++)
            ((float *)in.data)[i] = (float)i - 2.5f;
        slim_program_run(p, &(slim_run_opts){0}, &err);
        slim_program_output(p, "gate", &out, &err);
        float v = ((float *)out.data)[5]; /* 2.5 * sigmoid(2.5) */
        harness_ok(v > 2.3103f && v < 2.3104f, "swish runs inside a compiled graph (%.5f)", v);
    } else {
        harness_ok(false, "compile a graph using swish: %s", err.msg);
    }
    slim_program_free(p);
    slim_graph_free(g);
    fused_swish(reg);
    int rules = slim_registry_fusion_count(reg);

    st = slim_registry_load_plugin(reg, plugin_path("swish", path, sizeof path), &err);
    harness_ok(st == SLIM_OK && slim_registry_count(reg) == before + 1,
               "loading the same plugin file again is a no-op");
    expect_fail(reg, "swish_badabi", SLIM_EABI, "built for slim ABI 2.");
    expect_fail(reg, "swish_noinit", SLIM_ENOTFOUND, "does not export slim_plugin_init");
    expect_fail(reg, "swish_dup", SLIM_EEXIST, "op 'relu'");
    expect_fail(reg, "no_such_plugin", SLIM_ENOTFOUND, "cannot load plugin");
    harness_ok(slim_registry_count(reg) == before + 1 && slim_registry_fusion_count(reg) == rules,
               "failed loads leave the registry unchanged (%d ops, %d fusion rules)",
               slim_registry_count(reg), slim_registry_fusion_count(reg));
    slim_registry_free(reg);
    printf("1..%d\n", harness_count());
    return harness_failures() ? 1 : 0;
}
