/* tests/ops/cases_shape.c - concat along axes 0..3 with 1 to 4 inputs, pad in every mode
 * with asymmetric paddings (on inner axes, on the last axis, pads as large as each mode
 * allows), reshape with -1 and 0, flatten at every axis, squeeze with and without axes,
 * and known values for each pad mode. */
#include "cases.h"

#include <string.h>

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float cat_a[] = {1, 2, 3, 4}, cat_b[] = {5, 6};
static const float cat_y[] = {1, 2, 5, 3, 4, 6};  /* [[1,2],[3,4]] ++ [[5],[6]] on axis 1 */
static const float cat_y0[] = {1, 2, 3, 4, 5, 6}; /* (2,2) ++ (1,2) on axis 0 */

/* [1,2,3] padded with 2 before and 1 after. */
static const float p123[] = {1, 2, 3};
static const float pad_const[] = {9, 9, 1, 2, 3, 9};
static const float pad_reflect[] = {3, 2, 1, 2, 3, 2};
static const float pad_symmetric[] = {2, 1, 1, 2, 3, 3};
static const float pad_edge[] = {1, 1, 1, 2, 3, 3};
/* [[1,2],[3,4]] REFLECT paddings [1,0,0,1]: row 1 mirrored above, column 0 mirrored right. */
static const float pad2_reflect[] = {3, 4, 3, 1, 2, 1, 3, 4, 3};

static const float six[] = {1, 2, 3, 4, 5, 6};

static const harness_case cases[] = {
    {CASE("axis0", "concat", "axis=0", 2, F32(4, 2, 3, 2, 2), F32(4, 1, 3, 2, 2))},
    {CASE("axis1_three", "concat", "axis=1", 3, F32(4, 2, 1, 3, 2), F32(4, 2, 2, 3, 2),
          F32(4, 2, 3, 3, 2))},
    {CASE("axis2_four", "concat", "axis=2", 4, F32(4, 1, 2, 1, 3), F32(4, 1, 2, 2, 3),
          F32(4, 1, 2, 3, 3), F32(4, 1, 2, 1, 3))},
    {CASE("axis3", "concat", "axis=3", 2, F32(4, 2, 2, 2, 3), F32(4, 2, 2, 2, 5))},
    {CASE("axis_neg1_default", "concat", NULL, 3, F32(2, 3, 4), F32(2, 3, 1), F32(2, 3, 2))},
    {CASE("axis_neg3", "concat", "axis=-3", 2, F32(3, 1, 2, 3), F32(3, 2, 2, 3))},
    {CASE("single", "concat", NULL, 1, F32(2, 3, 5))},
    {CASE("known_axis1", "concat", "axis=1", 2, VALS(2, cat_a, 2, 2), VALS(2, cat_b, 2, 1)),
     .expect = cat_y},
    {CASE("known_axis0", "concat", "axis=0", 2, VALS(2, cat_a, 2, 2), VALS(2, cat_b, 1, 2)),
     .expect = cat_y0},

    {CASE("constant_hw", "pad", "paddings=[0,0,1,2,2,1,0,0]; constant_value=0.5", 1,
          F32(4, 2, 3, 4, 2))},
    {CASE("constant_all_axes", "pad", "paddings=[1,0,0,2,1,3]", 1, F32(3, 2, 3, 3))},
    {CASE("reflect_hw", "pad", "paddings=[0,0,2,1,1,3,0,0]; mode=REFLECT", 1, F32(4, 2, 4, 5, 3))},
    {CASE("reflect_last_max", "pad", "paddings=[1,2,3,4]; mode=REFLECT", 1, F32(2, 3, 5))},
    {CASE("symmetric", "pad", "paddings=[1,2,3,0,2,4]; mode=SYMMETRIC", 1, F32(3, 2, 3, 4))},
    {CASE("symmetric_hw", "pad", "paddings=[0,0,1,2,0,3,0,0]; mode=SYMMETRIC", 1,
          F32(4, 1, 3, 4, 2))},
    {CASE("edge_large", "pad", "paddings=[0,0,3,1,0,4,2,2]; mode=EDGE", 1, F32(4, 1, 2, 3, 1))},
    {CASE("edge_vector", "pad", "paddings=[3,5]; mode=EDGE", 1, F32(1, 4))},
    {CASE("none", "pad", "paddings=[0,0,0,0]; mode=REFLECT", 1, F32(2, 3, 4))},
    {CASE("known_constant", "pad", "paddings=[2,1]; constant_value=9", 1, VALS(1, p123, 3)),
     .expect = pad_const},
    {CASE("known_reflect", "pad", "paddings=[2,1]; mode=REFLECT", 1, VALS(1, p123, 3)),
     .expect = pad_reflect},
    {CASE("known_symmetric", "pad", "paddings=[2,1]; mode=SYMMETRIC", 1, VALS(1, p123, 3)),
     .expect = pad_symmetric},
    {CASE("known_edge", "pad", "paddings=[2,1]; mode=EDGE", 1, VALS(1, p123, 3)),
     .expect = pad_edge},
    {CASE("known_reflect_2d", "pad", "paddings=[1,0,0,1]; mode=REFLECT", 1, VALS(2, cat_a, 2, 2)),
     .expect = pad2_reflect},

    {CASE("keep0_infer", "reshape", "shape=[0,-1]", 1, F32(3, 2, 3, 4))},
    {CASE("infer_middle", "reshape", "shape=[4,-1,2]", 1, F32(3, 2, 3, 4))},
    {CASE("to_vector", "reshape", "shape=[-1]", 1, F32(4, 2, 3, 4, 5))},
    {CASE("to_scalar", "reshape", "shape=[]", 1, F32(2, 1, 1))},
    {CASE("known", "reshape", "shape=[3,2]", 1, VALS(1, six, 6)), .expect = six},

    {CASE("default", "flatten", NULL, 1, F32(4, 2, 3, 4, 5))},
    {CASE("axis0", "flatten", "axis=0", 1, F32(3, 2, 3, 4))},
    {CASE("axis_neg1", "flatten", "axis=-1", 1, F32(3, 2, 3, 4))},
    {CASE("axis_rank", "flatten", "axis=3", 1, F32(3, 2, 3, 4))},
    {CASE("batch1", "flatten", NULL, 1, F32(4, 1, 1, 1, 7))},

    {CASE("all", "squeeze", NULL, 1, F32(4, 1, 3, 1, 4))},
    {CASE("axis0", "squeeze", "axes=[0]", 1, F32(4, 1, 3, 1, 4))},
    {CASE("axis_neg2", "squeeze", "axes=[-2]", 1, F32(4, 1, 3, 1, 4))},
    {CASE("two_axes", "squeeze", "axes=[1,2]", 1, F32(4, 2, 1, 1, 5))},
    {CASE("to_scalar", "squeeze", NULL, 1, F32(2, 1, 1))},
    {CASE("known", "squeeze", NULL, 1, VALS(3, six, 1, 6, 1)), .expect = six},
};

static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    slim_tensor_desc cat[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(2, 2, 4)};
    harness_infer_fails(reg, "concat", "mismatch", "axis=0", false, cat, 2,
                        "equal except along axis 0");
    harness_infer_fails(reg, "concat", "bad_axis", "axis=2", false, cat, 2, "out of range");
    slim_tensor_desc x[] = {HARNESS_DESC(2, 3, 4)};
    harness_infer_fails(reg, "pad", "pad_count", "paddings=[1,1]", false, x, 1, "needs 4");
    harness_infer_fails(reg, "pad", "reflect_too_large", "paddings=[0,0,4,0]; mode=REFLECT", false,
                        x, 1, "at most 3 each");
    harness_infer_fails(reg, "pad", "symmetric_too_large", "paddings=[0,0,0,5]; mode=SYMMETRIC",
                        false, x, 1, "at most 4 each");
    harness_infer_fails(reg, "pad", "pad_negative", "paddings=[0,0,-1,0]", false, x, 1,
                        "must be >= 0");
    harness_infer_fails(reg, "reshape", "reshape_numel", "shape=[5,-1]", false, x, 1,
                        "not a multiple");
    harness_infer_fails(reg, "reshape", "reshape_size", "shape=[5,2]", false, x, 1,
                        "cannot reshape");
    harness_infer_fails(reg, "reshape", "reshape_two_infer", "shape=[-1,-1]", false, x, 1,
                        "more than one -1");
    harness_infer_fails(reg, "reshape", "reshape_zero", "shape=[2,6,0]", false, x, 1, "has rank 2");
    harness_infer_fails(reg, "flatten", "flatten_axis", "axis=3", false, x, 1, "out of range");
    slim_tensor_desc s[] = {HARNESS_DESC(3, 1, 3, 1)};
    harness_infer_fails(reg, "squeeze", "not_one", "axes=[1]", false, s, 1, "only size-1 axes");
    harness_infer_fails(reg, "squeeze", "twice", "axes=[0,-3]", false, s, 1, "listed twice");
    return harness_failures() - before;
}

static const harness_family harness_family_shape = {"shape", cases,
                                                    (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_shape)
