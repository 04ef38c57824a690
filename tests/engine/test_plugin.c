/* tests/engine/test_plugin.c - load the example plugin, run and grad-check its
 * op, use it in a graph, and check the loader's message for each failure. */
#include "../ops/harness.h"

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

    st = slim_registry_load_plugin(reg, plugin_path("swish", path, sizeof path), &err);
    harness_ok(st == SLIM_OK && slim_registry_count(reg) == before + 1,
               "loading the same plugin file again is a no-op");
    expect_fail(reg, "swish_badabi", SLIM_EABI, "built for slim ABI 2.");
    expect_fail(reg, "swish_noinit", SLIM_ENOTFOUND, "does not export slim_plugin_init");
    expect_fail(reg, "swish_dup", SLIM_EEXIST, "op 'relu'");
    expect_fail(reg, "no_such_plugin", SLIM_ENOTFOUND, "cannot load plugin");
    harness_ok(slim_registry_count(reg) == before + 1,
               "failed loads leave the registry unchanged (%d ops)", slim_registry_count(reg));
    slim_registry_free(reg);
    printf("1..%d\n", harness_count());
    return harness_failures() ? 1 : 0;
}
