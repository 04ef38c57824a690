/*
 * tests/ops/harness.h - the generic op harness.
 *
 * For each case: random inputs (fixed seed) -> infer -> forward with the fast
 * kernels at 1 and 3 threads, compared with forward_ref; then backward against
 * central finite differences of L = sum(out_j * r_j) for a random r, on a
 * sample of elements of every differentiable f32 input.
 *
 * Output is TAP ("ok N - conv2d/same_s2 forward" ...), one line per check.
 */
#ifndef SLIM_TESTS_HARNESS_H
#define SLIM_TESTS_HARNESS_H

#include <slim/slim.h>

typedef struct harness_input {
    slim_dtype dtype; /* 0 = SLIM_F32 */
    int rank;
    int64_t dim[SLIM_MAX_DIMS];
    double lo, hi;          /* values drawn uniformly in [lo, hi); ints in [lo, hi) too.
                             * lo == hi == 0: f32 in [-1, 1) */
    const float *values;    /* fixed f32 values instead (numel of them), or NULL */
    const int64_t *ivalues; /* fixed integer values (for i32/i64/u8 inputs), or NULL */
    bool state;             /* a state buffer the op writes (batch-norm moving stats) */
} harness_input;

/* Inputs of one case at most (conv2d_chain takes 17). */
#define HARNESS_MAX_IN 17

typedef struct harness_case {
    const char *name; /* "same_s2": printed as op/name */
    const char *op;
    const char *attrs; /* "strides=[2, 2]; padding=SAME" parsed with slim_attrs_set_text */
    int n_in;
    harness_input in[HARNESS_MAX_IN];
    bool training;             /* infer and kernels in training mode */
    double fwd_tol;            /* max |fast - ref| / (1 + |ref|); 0 = 1e-4 */
    double grad_tol;           /* max |analytic - numeric| / (1e-2 + |numeric|) ...; 0 = 2e-2 */
    double eps;                /* finite-difference step; 0 = 1e-3 */
    bool no_grad;              /* skip the gradient check (op not differentiable) */
    unsigned skip_grad_inputs; /* bit i: do not check input i's gradient */
    bool no_fd;                /* large: no finite differences (backward vs reference only) */
    /* Expected output 0 values (numel of them) for a known-value check with
     * fixed inputs, or NULL. Compared with tolerance fwd_tol. */
    const float *expect;
} harness_case;

/* Run one case; prints TAP lines through harness_ok. Returns the number of failures. */
int harness_run(const slim_registry *reg, const harness_case *c);

/* TAP helpers shared by the test programs. */
void harness_ok(bool ok, const char *fmt, ...) SLIM_PRINTF(2, 3);
int harness_failures(void);
int harness_count(void);
void harness_diag(const char *fmt, ...) SLIM_PRINTF(1, 2);

/* Families of cases: each tests/ops/cases_<family>.c defines one array. */
typedef struct harness_family {
    const char *name;
    const harness_case *cases;
    int n_cases;
    /* Optional extra checks that need more than a case table (fixed known
     * values with several outputs, state updates, determinism); returns failures. */
    int (*extra)(const slim_registry *reg);
} harness_family;

#endif
