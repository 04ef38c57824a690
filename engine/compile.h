/* engine/compile.h - what the compiler's passes share. engine/compile.c runs
 * them in this order over one slim__build:
 *
 *   prune      compile.c   the nodes the marked outputs (or everything) need
 *   rewrite    rewrite.c   inference: the registered fusion rules (ops/)
 *   infer      compile.c   each node again for the mode and thread count
 *   autodiff   autodiff.c  which tensors get gradients, which nodes backward
 *   slots      update.c    the optimizer's per-parameter state
 *   steps      steps.c     forward steps; autodiff.c the backward ones, with
 *                          update.c's updates where a gradient is final
 *                          (across processes: the allreduce hand-off there)
 *   deferred   update.c    updates after backward: each behind its
 *                          allreduce wait, or after the global norm
 *   plan       plan.c      buffer lifetimes -> offsets in one arena
 */
#ifndef SLIM_ENGINE_COMPILE_H
#define SLIM_ENGINE_COMPILE_H

#include "engine/program.h"
#include "engine/registry.h"

#define SLIM__ALIGN 64

/* A node as the program runs it: the graph's, or what a rewrite made of it
 * (a convolution that took in the batch norm and activation after it). */
typedef struct slim__cnode {
    const slim_op_desc *d;
    slim__attr_set attrs; /* the graph node's, or its own (owns_attrs) */
    bool owns_attrs;
    bool live; /* runs: needed, and not taken in by another node */
    int taken; /* how many nodes it took in */
    int n_in, n_out;
    slim_tid in[SLIM_MAX_INPUTS];
    slim_tid out[SLIM__MAX_OUTPUTS];
    const char *name;  /* its step's name (the graph node's, or kept by the program) */
    const char *label; /* what profiles show as its op; NULL: d->name */
} slim__cnode;

typedef struct slim__build {
    slim_program *p;
    slim_graph *g;
    const slim_compile_opts *o;
    slim_error *err;
    bool plan_only; /* slim_graph_plan: sizes only, no arena, slots or threads */
    slim__cnode *nodes;
    bool backward;           /* training with a loss */
    const slim_op_desc *opt; /* optimizer op or NULL */
    slim__attr_set opt_attrs;
    bool *node_training;       /* per node: the mode its kernels run in */
    bool *req, *live;          /* per tensor: needs a gradient; its gradient is computed */
    bool *bwd;                 /* per node: has a backward step */
    int *contrib, *seen;       /* per tensor: gradient contributions, and those emitted */
    int *fwd_step;             /* per node: its forward step */
    int *deferred, n_deferred; /* parameters to update after backward */
    int scale_view;            /* clipping: the view of the gradient scale */
} slim__build;

/* The passes, in order. */
slim_status slim__rewrite(slim__build *b);
slim_status slim__autodiff(slim__build *b);
slim_status slim__slots(slim__build *b);
slim_status slim__forward_steps(slim__build *b);
slim_status slim__backward_steps(slim__build *b);
/* A parameter's gradient is final: its update now, or (across processes,
 * or with global-norm clipping) after backward, in slim__deferred_updates. */
slim_status slim__gradient_final(slim__build *b, int param);
slim_status slim__deferred_updates(slim__build *b);
slim_status slim__plan(slim_program *p, bool allocate, slim_error *err);

/* The passes' error when out of memory (steps.c, which calls no pass: the
 * passes call into it, never back into compile.c). */
slim_status slim__oom(slim_error *err);
/* The program's parts (steps.c): an arena buffer, a block of n views, a
 * step (NULL when out of memory: earlier step pointers may move), a view's
 * description and where its data lives (buf, or data when buf is -1). */
int slim__new_buf(slim_program *p, size_t bytes);
int slim__new_views(slim_program *p, int n);
slim__step *slim__new_step(slim_program *p, slim__step_kind kind, int node);
void slim__set_view(slim_program *p, int v, slim_tensor_desc d, int buf, void *data);
/* Memory the program keeps and frees (step names, infer params), or NULL
 * (s freed) when out of memory. */
void *slim__keep(slim_program *p, void *s);
size_t slim__desc_bytes(const slim_tensor_desc *d);
/* A step (its index into *step) running the compiler's own op for role
 * (engine/registry.h) on inputs described by in (attrs NULL: none), with
 * its views and workspace; the caller binds the views. */
slim_status slim__role_step(slim__build *b, slim__step_kind kind, int node, slim__role role,
                            const slim__attr_set *attrs, const slim_tensor_desc *in, int n_in,
                            const char *name, slim__infer_result *r, int *step);

#endif
