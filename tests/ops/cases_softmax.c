/* tests/ops/cases_softmax.c - softmax and log_softmax: the last axis (rows), an inner axis
 * of a 3-D and a 4-D tensor (strided columns, including more than one column block), batch 1,
 * a single class, and known values, also for large logits (stability). */
#include "cases.h"

#include <string.h>

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

/* softmax([1,2,3]) = e^k / (e + e^2 + e^3); log_softmax = k - log(e + e^2 + e^3). */
static const float x123[] = {1, 2, 3};
static const float big[] = {1000, 1001, 1002, -1000, -999, -998};
static const float sm123[] = {0.09003057f, 0.24472847f, 0.66524096f};
static const float sm_big[] = {0.09003057f, 0.24472847f, 0.66524096f,
                               0.09003057f, 0.24472847f, 0.66524096f};
static const float lsm123[] = {-2.40760596f, -1.40760596f, -0.40760596f};
static const float lsm_big[] = {-2.40760596f, -1.40760596f, -0.40760596f,
                                -2.40760596f, -1.40760596f, -0.40760596f};
/* axis 0 of [[1,2],[3,2]]: columns [1,3] and [2,2]. */
static const float col_x[] = {1, 2, 3, 2};
static const float col_y[] = {0.11920292f, 0.5f, 0.88079708f, 0.5f};

static const harness_case cases[] = {
    {CASE("rows", "softmax", NULL, 1, F32R(-3, 3, 2, 4, 10))},
    {CASE("batch1", "softmax", NULL, 1, F32R(-3, 3, 2, 1, 7))},
    {CASE("one_class", "softmax", NULL, 1, F32(2, 3, 1))},
    {CASE("axis1_3d", "softmax", "axis=1", 1, F32R(-3, 3, 3, 2, 5, 3))},
    {CASE("axis1_4d", "softmax", "axis=1", 1, F32R(-3, 3, 4, 2, 3, 4, 5))},
    {CASE("axis0_4d", "softmax", "axis=0", 1, F32R(-3, 3, 4, 3, 2, 2, 3))},
    {CASE("axis_neg2", "softmax", "axis=-2", 1, F32R(-3, 3, 3, 2, 4, 3))},
    {CASE("axis1_two_blocks", "softmax", "axis=1", 1, F32R(-3, 3, 3, 2, 3, 300))},
    {CASE("known", "softmax", NULL, 1, VALS(1, x123, 3)), .expect = sm123},
    {CASE("known_large", "softmax", NULL, 1, VALS(2, big, 2, 3)), .expect = sm_big,
     .no_grad = true},
    {CASE("known_axis0", "softmax", "axis=0", 1, VALS(2, col_x, 2, 2)), .expect = col_y},

    {CASE("rows", "log_softmax", NULL, 1, F32R(-3, 3, 2, 4, 10))},
    {CASE("batch1", "log_softmax", NULL, 1, F32R(-3, 3, 2, 1, 9))},
    {CASE("axis1_3d", "log_softmax", "axis=1", 1, F32R(-3, 3, 3, 2, 5, 3))},
    {CASE("axis1_4d", "log_softmax", "axis=1", 1, F32R(-3, 3, 4, 2, 3, 4, 5))},
    {CASE("axis1_two_blocks", "log_softmax", "axis=1", 1, F32R(-3, 3, 3, 1, 4, 270))},
    {CASE("known", "log_softmax", NULL, 1, VALS(1, x123, 3)), .expect = lsm123},
    {CASE("known_large", "log_softmax", NULL, 1, VALS(2, big, 2, 3)), .expect = lsm_big,
     .no_grad = true},
};

static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    slim_tensor_desc x[] = {HARNESS_DESC(2, 3, 4)};
    harness_infer_fails(reg, "softmax", "axis", "axis=2", false, x, 1, "out of range");
    harness_infer_fails(reg, "log_softmax", "axis", "axis=-3", false, x, 1, "out of range");
    slim_tensor_desc s[] = {HARNESS_DESC(0, 0)};
    harness_infer_fails(reg, "softmax", "scalar", NULL, false, s, 1, "rank >= 1");
    return harness_failures() - before;
}

static const harness_family harness_family_softmax = {"softmax", cases,
                                                      (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_softmax)
