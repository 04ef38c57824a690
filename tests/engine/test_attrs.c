/* tests/engine/test_attrs.c - attribute text parsing and schema checks, with
 * the exact messages users see. */
#include "../ops/harness.h"
#include "core/attrs.h"

#include <stdio.h>
#include <string.h>

static slim_registry *reg;

static void expect(const char *op, const char *key, const char *text, slim_status code,
                   const char *msg)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_tid x, y;
    slim_shape s = {4, {1, 6, 6, 2}};
    slim_graph_input(g, "x", SLIM_F32, &s, &x, &err);
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_text(a, key, text);
    if (strcmp(op, "max_pool") == 0 && strcmp(key, "ksize") != 0)
        slim_attrs_set_text(a, "ksize", "[2, 2]");
    slim_status st = slim_graph_add(g, op, "n1", &x, 1, a, &y, 1, NULL, &err);
    bool ok = st == code && (code == SLIM_OK || strcmp(err.msg, msg) == 0);
    harness_ok(ok, "%s %s=%s -> %s", op, key, text, code ? msg : "ok");
    if (!ok)
        harness_diag("got status %d: %s", st, err.msg);
    slim_attrs_free(a);
    slim_graph_free(g);
}

/* slim_attrs_set_list: "k=v; k=v" with spaces, a trailing ';', and its errors */
static void set_list(void)
{
    slim_graph *g;
    slim_error err = {0};
    slim_graph_new(reg, &g, &err);
    slim_tid x, y;
    slim_graph_input(g, "x", SLIM_F32, &(slim_shape){4, {1, 6, 6, 2}}, &x, &err);
    slim_attrs *a = slim_attrs_new();
    slim_status st = slim_attrs_set_list(a, " ksize = [3, 3] ;strides=[2,2];  padding = VALID ; ");
    slim_tensor_desc d = {0};
    bool ok = st == SLIM_OK && slim__attrs_count(a) == 3 &&
              slim_graph_add(g, "max_pool", "p", &x, 1, a, &y, 1, NULL, &err) == SLIM_OK &&
              slim_graph_tensor_info(g, y, &d) == SLIM_OK && d.shape.dim[1] == 2 &&
              d.shape.dim[2] == 2;
    harness_ok(ok,
               "set_list: three attributes with spaces and a trailing ';' give a 3x3/2 VALID "
               "pool (6x6 -> %lldx%lld)",
               (long long)d.shape.dim[1], (long long)d.shape.dim[2]);
    slim_attrs_free(a);
    a = slim_attrs_new();
    harness_ok(slim_attrs_set_list(a, NULL) == SLIM_OK && slim_attrs_set_list(a, "") == SLIM_OK &&
                   slim__attrs_count(a) == 0,
               "set_list: NULL and \"\" set nothing");
    harness_ok(slim_attrs_set_list(a, "alpha=1; beta") == SLIM_EINVAL &&
                   slim_attrs_set_list(a, " = 3") == SLIM_EINVAL && slim__attrs_count(a) == 1 &&
                   !strcmp(slim__attrs_key(a, 0), "alpha"),
               "set_list: a part without '=' or without a key is refused, what came before "
               "it set");
    slim_attrs_free(a);
    slim_graph_free(g);
}

int main(void)
{
    slim_error err;
    if (slim_registry_new(&reg, &err) != SLIM_OK)
        return 1;
    set_list();
    expect("max_pool", "ksize", "[3, 3]", SLIM_OK, NULL);
    expect("max_pool", "ksize", "3,3", SLIM_OK, NULL);
    expect("max_pool", "ksize", "[3, 3.5]", SLIM_ETYPE,
           "node 'n1': attribute 'ksize' of max_pool: expected a list of integers, got '[3, 3.5]'");
    expect("max_pool", "padding", "SMAE", SLIM_EINVAL,
           "node 'n1': attribute 'padding' of max_pool: 'SMAE' is not one of SAME|VALID|EXPLICIT");
    expect("max_pool", "strides", "[2, 2", SLIM_ETYPE,
           "node 'n1': attribute 'strides' of max_pool: expected a list of integers, got '[2, 2'");
    expect("leaky_relu", "alpha", "abc", SLIM_ETYPE,
           "node 'n1': attribute 'alpha' of leaky_relu: expected a number, got 'abc'");
    expect("dropout", "keep_prob", "1.5", SLIM_EINVAL,
           "node 'n1': attribute 'keep_prob' of dropout: 1.5 is out of range [0, 1]");
    expect("global_avg_pool", "keep_dims", "maybe", SLIM_ETYPE,
           "node 'n1': attribute 'keep_dims' of global_avg_pool: expected a boolean (true or "
           "false), got 'maybe'");
    expect("relu", "alpha", "1", SLIM_EINVAL,
           "node 'n1': unknown attribute 'alpha' for op relu (expected none)");
    slim_registry_free(reg);
    printf("1..%d\n", harness_count());
    return harness_failures() ? 1 : 0;
}
