/* engine/graph.h - the graph's internal structure, shared by graph.c (the
 * builder), compile.c and exec.c. */
#ifndef SLIM_ENGINE_GRAPH_H
#define SLIM_ENGINE_GRAPH_H

#include "core/attrs.h"
#include "core/names.h"
#include "engine/node.h"

typedef enum { SLIM__T_INPUT, SLIM__T_PARAM, SLIM__T_NODE } slim__tkind;

typedef struct slim__tinfo {
    char *name;
    slim_tensor_desc d;
    slim__tkind kind;
    int producer; /* node index (SLIM__T_NODE), param index (SLIM__T_PARAM), -1 */
    int out_index;
    bool marked; /* readable after run */
} slim__tinfo;

typedef struct slim__param {
    char *name;
    slim_tid t;
    slim_init init;
    unsigned flags;
    float lr_mult;
    float *data; /* numel floats, 64-byte aligned */
} slim__param;

typedef struct slim__node {
    char *name;
    const slim_op_desc *d;
    slim__attr_set attrs;
    int n_in, n_out;
    slim_tid in[SLIM_MAX_INPUTS];
    slim_tid out[SLIM__MAX_OUTPUTS];
} slim__node;

struct slim_graph {
    const slim_registry *reg;
    int n_tensors, cap_tensors;
    slim__tinfo *tensors;
    int n_nodes, cap_nodes;
    slim__node *nodes;
    int n_params, cap_params;
    slim__param *params;
    slim__names tensor_names, node_names, param_names; /* name -> index */
    slim_tid loss;                                     /* -1 when none */
    bool params_ready;
};

#endif
