/* bench/benchutil.h - helpers shared by the benchmarks (header only): timing
 * (tools/measure.h, which slimrun bench uses too), and adding graph nodes with
 * their attributes given as text. */
#ifndef SLIM_BENCH_BENCHUTIL_H
#define SLIM_BENCH_BENCHUTIL_H

#include "tools/measure.h"

#include <slim/slim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Add a node of op kind `op`; attrs as "key=value; key=value" text, parsed by
 * the op's schema. A benchmark's graph is fixed, so a failure exits, naming `prog`. */
static inline slim_tid bench_layer(const char *prog, slim_graph *g, const char *op,
                                   const char *name, const slim_tid *in, int n, const char *attrs)
{
    slim_error err = {0};
    slim_attrs *a = slim_attrs_new();
    if (slim_attrs_set_list(a, attrs) != SLIM_OK) {
        fprintf(stderr, "%s: %s: cannot set the attributes \"%s\"\n", prog, name, attrs);
        exit(1);
    }
    slim_tid out;
    if (slim_graph_add(g, op, name, in, n, a, &out, 1, NULL, &err) != SLIM_OK) {
        fprintf(stderr, "%s: build: %s\n", prog, err.msg);
        exit(1);
    }
    slim_attrs_free(a);
    return out;
}

#endif
