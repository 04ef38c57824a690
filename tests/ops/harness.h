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

/* Inputs infer must refuse: building op (attrs: "key=value; ..." as in a case,
 * or NULL) on in[0..n_in) in training mode or not must fail with a message
 * containing want. One TAP line; returns 1 on failure, else 0. */
int harness_infer_fails(const slim_registry *reg, const char *op, const char *label,
                        const char *attrs, bool training, const slim_tensor_desc *in, int n_in,
                        const char *want);
/* An f32 tensor description: HARNESS_DESC(2, 3, 4) is (3,4). */
#define HARNESS_DESC(r, ...)                                                                       \
    {                                                                                              \
        SLIM_F32,                                                                                  \
        {                                                                                          \
            .rank = (r), .dim = { __VA_ARGS__ }                                                    \
        }                                                                                          \
    }

/* TAP helpers shared by the test programs. */
void harness_ok(bool ok, const char *fmt, ...) SLIM_PRINTF(2, 3);
int harness_failures(void);
int harness_count(void);
void harness_diag(const char *fmt, ...) SLIM_PRINTF(1, 2);

/* Families of cases: each tests/ops/cases_<family>.c defines one and registers
 * it with HARNESS_REGISTER, so adding a family is its file and its line in
 * tests/local.mk. test_ops runs them in link order; a family may come in parts
 * (files) registered under one name. */
typedef struct harness_family {
    const char *name;
    const harness_case *cases;
    int n_cases;
    /* Optional extra checks that need more than a case table (fixed known
     * values with several outputs, state updates, determinism); returns failures. */
    int (*extra)(const slim_registry *reg);
} harness_family;

void harness_family_add(const harness_family *f);
/* The families registered; *n their count. */
const harness_family *const *harness_families(int *n);
#define HARNESS_REGISTER(fam)                                                                      \
    __attribute__((constructor)) static void harness_register_##fam(void)                          \
    {                                                                                              \
        harness_family_add(&fam);                                                                  \
    }

#endif
