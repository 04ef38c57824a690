/* tests/ops/cases_grad.c - the ops the compiler adds to a training program:
 * ones_like (the loss's gradient), gradient_sum (the harness also runs it
 * with y over a, as the compiler does) and global_norm (known values,
 * chunks across tensors, a non-finite norm; tests/runtime/test_train_opts
 * runs it over more gradients than a graph node takes inputs). */
#include "cases.h"
#include "runtime/oprun.h"

#include <math.h>

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float ones6[] = {1, 1, 1, 1, 1, 1};
static const float a3[] = {1, -2, 3.5f}, b3[] = {0.25f, 2, -1}, sum3[] = {1.25f, 0, 2.5f};
/* |(3, 4)| = 5: clip 2.5 halves the gradients; clip 10 leaves them */
static const float g34[] = {3, 4}, half[] = {0.5f}, one[] = {1};

static const harness_case cases[] = {
    {CASE("scalar", "ones_like", NULL, 1, F32(0, 0)), .expect = ones6, .no_grad = true},
    {CASE("known", "ones_like", NULL, 1, F32(2, 2, 3)), .expect = ones6, .no_grad = true},
    {CASE("random", "gradient_sum", NULL, 2, F32(3, 2, 3, 4), F32(3, 2, 3, 4))},
    {CASE("long", "gradient_sum", NULL, 2, F32(1, 10007), F32(1, 10007))},
    {CASE("known", "gradient_sum", NULL, 2, VALS(1, a3, 3), VALS(1, b3, 3)), .expect = sum3},
    {CASE("known_clipped", "global_norm", "clip_norm=2.5", 1, VALS(1, g34, 2)), .expect = half,
     .no_grad = true},
    {CASE("known_unclipped", "global_norm", "clip_norm=10", 1, VALS(1, g34, 2)), .expect = one,
     .no_grad = true},
    /* chunks of 4096 that end inside and at the end of tensors */
    {CASE("chunks", "global_norm", "clip_norm=1", 4, F32(2, 3, 2000), F32(1, 4096), F32(0, 0),
          F32(3, 5, 7, 300)),
     .no_grad = true},
};

/* A non-finite gradient makes the scale NaN, as TF. */
static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    static float g0[] = {1, 2}, g1[] = {3, INFINITY, 4}, g2[] = {0};
    void *data[3] = {g0, g1, g2};
    slim_tensor_desc in[3] = {{SLIM_F32, {1, {2}}}, {SLIM_F32, {1, {3}}}, {SLIM_F32, {0, {0}}}};
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_float(a, "clip_norm", 1.0);
    for (int nth = 1; nth <= 3; nth += 2) {
        slim__oprun *r = NULL;
        slim_error err = {0};
        slim_status st = slim__oprun_new(reg, "global_norm", a, in, 3, true, nth, &r, &err);
        if (st == SLIM_OK)
            slim__oprun_forward(r, data, false, 1, 0, 0);
        harness_ok(st == SLIM_OK && isnan(*(const float *)slim__oprun_output(r, 0).data) &&
                       isinf(*(const float *)slim__oprun_output(r, 1).data),
                   "global_norm/non_finite: %d thread%s, scale NaN and norm inf%s%s", nth,
                   nth > 1 ? "s" : "", st ? ": " : "", st ? err.msg : "");
        slim__oprun_free(r);
    }
    slim_attrs_free(a);
    return harness_failures() - before;
}

static const harness_family harness_family_grad = {"grad", cases,
                                                   (int)(sizeof cases / sizeof *cases), extra};
HARNESS_REGISTER(harness_family_grad)
