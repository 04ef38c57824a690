/* tests/ops/cases_elementwise.c - add, multiply and bias_add: equal shapes, every broadcast
 * pattern (scalar, row, column, outer product, (N,1,1,C) vs (N,H,W,C), either side broadcast,
 * rank-extended), residual sums of 3 and 4 inputs, and known values. The backward checks
 * cover the reductions over broadcast dimensions. */
#include "cases.h"

#include <string.h>

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float m22[] = {1, 2, 3, 4}, row2[] = {10, 20}, col2[] = {2, 3};
static const float add_row[] = {11, 22, 13, 24};   /* [[1,2],[3,4]] + [10,20] */
static const float mul_col[] = {2, 4, 9, 12};      /* [[1,2],[3,4]] * [[2],[3]] */
static const float add_outer[] = {12, 22, 13, 23}; /* [[2],[3]] + [10,20] */
static const float sum3[] = {12, 24, 16, 28};      /* m22 + m22 + [10,20,10,20] */
static const float bias_b[] = {0.5f, -1};
static const float bias_y[] = {1.5f, 1, 3.5f, 3}; /* [[1,2],[3,4]] + [0.5,-1] */
static const float two[] = {2};
static const float tiled[] = {10, 20, 10, 20};
static const float mul_scalar[] = {2, 4, 6, 8};

static const harness_case cases[] = {
    {CASE("same", "add", NULL, 2, F32(4, 2, 3, 4, 5), F32(4, 2, 3, 4, 5))},
    {CASE("same_odd", "add", NULL, 2, F32(1, 13), F32(1, 13))},
    {CASE("scalar_rank0", "add", NULL, 2, F32(0, 0), F32(2, 3, 4))},
    {CASE("scalar_1", "add", NULL, 2, F32(2, 3, 4), F32(1, 1))},
    {CASE("row", "add", NULL, 2, F32(2, 4, 5), F32(1, 5))},
    {CASE("column", "add", NULL, 2, F32(2, 4, 5), F32(2, 4, 1))},
    {CASE("column_left", "add", NULL, 2, F32(2, 7, 1), F32(2, 7, 3))},
    {CASE("outer", "add", NULL, 2, F32(2, 3, 1), F32(2, 1, 4))},
    {CASE("nhwc_n11c", "add", NULL, 2, F32(4, 2, 3, 3, 4), F32(4, 2, 1, 1, 4))},
    {CASE("n11c_nhwc", "add", NULL, 2, F32(4, 2, 1, 1, 4), F32(4, 2, 3, 3, 4))},
    {CASE("rank_extend_mixed", "add", NULL, 2, F32(3, 2, 1, 3), F32(2, 4, 1))},
    {CASE("alternating", "add", NULL, 2, F32(4, 2, 1, 3, 1), F32(4, 1, 4, 1, 5))},
    {CASE("batch1", "add", NULL, 2, F32(4, 1, 3, 3, 2), F32(1, 2))},
    {CASE("three", "add", NULL, 3, F32(3, 2, 3, 5), F32(3, 2, 3, 5), F32(3, 2, 3, 5))},
    /* a residual add with its ReLU (ResNet v1): one pass, dy masked by y */
    {CASE("relu", "add", "activation=relu", 2, F32(4, 2, 5, 3, 7), F32(4, 2, 5, 3, 7)),
     .training = true},
    {CASE("relu6_three", "add", "activation=relu6", 3,
          {.rank = 2, .dim = {9, 11}, .lo = -4, .hi = 4},
          {.rank = 2, .dim = {9, 11}, .lo = -4, .hi = 4},
          {.rank = 2, .dim = {9, 11}, .lo = -4, .hi = 4}),
     .training = true},
    {CASE("four", "add", NULL, 4, F32(2, 3, 7), F32(2, 3, 7), F32(2, 3, 7), F32(2, 3, 7))},
    {CASE("known_row", "add", NULL, 2, VALS(2, m22, 2, 2), VALS(1, row2, 2)), .expect = add_row},
    {CASE("known_outer", "add", NULL, 2, VALS(2, col2, 2, 1), VALS(1, row2, 2)),
     .expect = add_outer},
    {CASE("known_three", "add", NULL, 3, VALS(2, m22, 2, 2), VALS(2, m22, 2, 2),
          VALS(2, tiled, 2, 2)),
     .expect = sum3},

    {CASE("same", "multiply", NULL, 2, F32(4, 2, 3, 4, 5), F32(4, 2, 3, 4, 5))},
    {CASE("scalar_rank0", "multiply", NULL, 2, F32(2, 3, 4), F32(0, 0))},
    {CASE("row", "multiply", NULL, 2, F32(1, 5), F32(2, 4, 5))},
    {CASE("column", "multiply", NULL, 2, F32(2, 4, 5), F32(2, 4, 1))},
    {CASE("outer", "multiply", NULL, 2, F32(2, 5, 1), F32(1, 3))},
    {CASE("nhwc_n11c", "multiply", NULL, 2, F32(4, 2, 3, 3, 4), F32(4, 2, 1, 1, 4))},
    {CASE("nhwc_nhw1", "multiply", NULL, 2, F32(4, 2, 3, 3, 4), F32(4, 2, 3, 3, 1))},
    {CASE("se_block", "multiply", NULL, 2, F32(4, 3, 6, 6, 8), F32(4, 3, 1, 1, 8))},
    {CASE("rank_extend_mixed", "multiply", NULL, 2, F32(2, 4, 1), F32(3, 2, 1, 3))},
    {CASE("alternating", "multiply", NULL, 2, F32(4, 1, 4, 1, 5), F32(4, 2, 1, 3, 1))},
    {CASE("known_column", "multiply", NULL, 2, VALS(2, m22, 2, 2), VALS(2, col2, 2, 1)),
     .expect = mul_col},
    {CASE("known_scalar", "multiply", NULL, 2, VALS(2, m22, 2, 2), VALS(0, two, 0)),
     .expect = mul_scalar},

    {CASE("nhwc", "bias_add", NULL, 2, F32(4, 2, 3, 4, 5), F32(1, 5))},
    {CASE("rows", "bias_add", NULL, 2, F32(2, 7, 3), F32(1, 3))},
    {CASE("batch1_wide", "bias_add", NULL, 2, F32(4, 1, 1, 1, 16), F32(1, 16))},
    {CASE("vector", "bias_add", NULL, 2, F32(1, 5), F32(1, 5))},
    {CASE("many_rows", "bias_add", NULL, 2, F32(4, 3, 5, 5, 2), F32(1, 2))},
    {CASE("known", "bias_add", NULL, 2, VALS(2, m22, 2, 2), VALS(1, bias_b, 2)), .expect = bias_y},
};

static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    slim_tensor_desc mismatch[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(1, 4)};
    harness_infer_fails(reg, "add", "no_broadcast", NULL, false, mismatch, 2, "do not broadcast");
    harness_infer_fails(reg, "multiply", "no_broadcast", NULL, false, mismatch, 2,
                        "do not broadcast");
    slim_tensor_desc three[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(2, 2, 3),
                                HARNESS_DESC(2, 1, 3)};
    harness_infer_fails(reg, "add", "three_unequal", NULL, false, three, 3,
                        "all shapes must be equal");
    slim_tensor_desc bc[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(1, 3)};
    harness_infer_fails(
        reg, "add", "relu_broadcast", "activation=relu", false, bc, 2,
        "activation=relu needs inputs of one shape (no broadcasting), got (2,3) and (3)");
    slim_tensor_desc ints[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(2, 2, 3)};
    ints[1].dtype = SLIM_I32;
    harness_infer_fails(reg, "multiply", "int_input", NULL, false, ints, 2, "must be f32");
    slim_tensor_desc bias[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(1, 4)};
    harness_infer_fails(reg, "bias_add", "bias_channels", NULL, false, bias, 2, "3 channels");
    return harness_failures() - before;
}

static const harness_family harness_family_elementwise = {
    "elementwise", cases, (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_elementwise)
