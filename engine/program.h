/* engine/program.h - a compiled program: a flat schedule of kernel steps over
 * one planned arena. Built by the compiler's passes (engine/compile.h), run
 * and queried by exec.c. */
#ifndef SLIM_ENGINE_PROGRAM_H
#define SLIM_ENGINE_PROGRAM_H

#include "core/threadpool.h"
#include "engine/graph.h"

typedef enum {
    SLIM__STEP_FWD = 0,
    SLIM__STEP_BWD = 1,
    SLIM__STEP_UPDATE = 2,
    SLIM__STEP_ACC = 3,  /* grad += partial gradient (a tensor with several consumers) */
    SLIM__STEP_SEED = 4, /* d loss / d loss = 1 */
} slim__step_kind;

typedef struct slim__step {
    slim__step_kind kind;
    int node;  /* graph node, or -1 */
    int param; /* update steps: graph param index; else -1 */
    const slim_op_desc *d;
    const void *params;
    slim_kernel_fn fn;
    bool single;   /* reference kernel: thread 0 only */
    bool training; /* the mode its kernels run in (frozen batch norm: false) */
    int n_in, n_out, n_saved;
    int v_in, v_out, v_saved, v_dout, v_din; /* first view of each block, -1 = none */
    int ws_buf;                              /* arena buffer, -1 = none */
    size_t ws_size;
    uint32_t reads_in, reads_out; /* backward: the forward inputs/outputs its kernel reads */
    uint32_t keep_out;            /* outputs readable after the run (bit j: output j) */
    float lr_mult;
    uint32_t node_id;
    const char *name;
    const char *op; /* the op's name, or what a fused step runs (a rule's label) */
    /* resolved after the arena exists */
    slim_tensor *in, *out, *saved, *dout, *din;
    void *ws;
} slim__step;

typedef struct slim__buffer {
    size_t bytes;
    int first, last; /* steps using it, inclusive */
    size_t offset;
} slim__buffer;

struct slim_program {
    slim_graph *g;
    bool training;
    int nth;
    slim__pool *pool;

    int n_steps, cap_steps;
    slim__step *steps;
    int n_views, cap_views;
    slim_tensor *views;
    int *view_buf; /* per view: arena buffer, or -1 when data is already set */
    int n_bufs, cap_bufs;
    slim__buffer *bufs;
    uint8_t *arena;
    size_t arena_bytes, naive_bytes;

    int *tbuf; /* per graph tensor: its arena buffer or -1 */
    int *gbuf; /* per graph tensor: its gradient buffer or -1 */
    int n_infer;
    slim__infer_result *infer; /* per graph node + per update step (params blobs) */

    int n_slots;   /* per parameter */
    float **slots; /* [param * n_slots + k], NULL when the param has none */
    size_t slot_bytes;

    int n_fwd, n_bwd, n_upd;
    int norm_step; /* global-norm clipping: the step computing the norm, or -1 */
    void **owned;  /* what steps point to: names (a chain's layers joined), params */
    int n_owned;
    bool profiling;
    slim_node_time *times;
    /* the current run */
    slim_run_opts run;
    /* inputs read from caller memory (slim_program_bind_input, exec.c) */
    struct slim__binding {
        slim_tid t;
        const void *data;
    } * bound;
    int n_bound;
    /* training across processes (slim_compile_opts.collective) */
    slim_collective coll;
    bool has_coll;
    const float *coll_src; /* the gradient the current wait step copies in */
    float coll_scale;
};

void slim__program_destroy(slim_program *p);

#endif
