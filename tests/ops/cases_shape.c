/* tests/ops/cases_shape.c - concat along axes 0..3 with 1 to 4 inputs, pad in every mode
 * with asymmetric paddings (on inner axes, on the last axis, pads as large as each mode
 * allows), reshape with -1 and 0, flatten at every axis, squeeze with and without axes,
 * and known values for each pad mode. */
#include "harness.h"
#include "engine/oprun.h"

#include <string.h>

extern const harness_family harness_family_shape;

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}
#define F32(r, ...)                                                                                \
    {                                                                                              \
        .rank = r, .dim = { __VA_ARGS__ }                                                          \
    }
#define VALS(r, v, ...)                                                                            \
    {                                                                                              \
        .rank = r, .dim = {__VA_ARGS__}, .values = v                                               \
    }

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

#define DESC(r, ...)                                                                               \
    {                                                                                              \
        SLIM_F32,                                                                                  \
        {                                                                                          \
            .rank = r, .dim = { __VA_ARGS__ }                                                      \
        }                                                                                          \
    }

/* infer must reject the inputs with attributes a with a message containing want (frees a). */
static void expect_error_attrs(const slim_registry *reg, const char *label, const char *op,
                               slim_attrs *a, int n, const slim_tensor_desc *in, const char *want)
{
    slim__oprun *r = NULL;
    slim_error err = {0};
    slim_status st = slim__oprun_new(reg, op, a, in, n, false, 1, &r, &err);
    slim__oprun_free(r);
    slim_attrs_free(a);
    bool ok = st != SLIM_OK && strstr(err.msg, want);
    harness_ok(ok, "%s/%s: infer fails with \"%s\"", op, label, want);
    if (!ok)
        harness_diag("got status %d: %s", st, err.msg);
}

/* The same with one attribute key=val (or none). */
static void expect_error(const slim_registry *reg, const char *label, const char *op,
                         const char *key, const char *val, int n, const slim_tensor_desc *in,
                         const char *want)
{
    slim_attrs *a = slim_attrs_new();
    if (key)
        slim_attrs_set_text(a, key, val);
    expect_error_attrs(reg, label, op, a, n, in, want);
}

static int extra(const slim_registry *reg)
{
    int before = harness_failures();
    slim_tensor_desc cat[] = {DESC(2, 2, 3), DESC(2, 2, 4)};
    expect_error(reg, "mismatch", "concat", "axis", "0", 2, cat, "equal except along axis 0");
    expect_error(reg, "bad_axis", "concat", "axis", "2", 2, cat, "out of range");
    slim_tensor_desc x[] = {DESC(2, 3, 4)};
    expect_error(reg, "pad_count", "pad", "paddings", "[1,1]", 1, x, "needs 4");
    slim_attrs *a = slim_attrs_new();
    slim_attrs_set_text(a, "paddings", "[0,0,4,0]");
    slim_attrs_set_text(a, "mode", "REFLECT");
    expect_error_attrs(reg, "reflect_too_large", "pad", a, 1, x, "at most 3 each");
    a = slim_attrs_new();
    slim_attrs_set_text(a, "paddings", "[0,0,0,5]");
    slim_attrs_set_text(a, "mode", "SYMMETRIC");
    expect_error_attrs(reg, "symmetric_too_large", "pad", a, 1, x, "at most 4 each");
    expect_error(reg, "pad_negative", "pad", "paddings", "[0,0,-1,0]", 1, x, "must be >= 0");
    expect_error(reg, "reshape_numel", "reshape", "shape", "[5,-1]", 1, x, "not a multiple");
    expect_error(reg, "reshape_size", "reshape", "shape", "[5,2]", 1, x, "cannot reshape");
    expect_error(reg, "reshape_two_infer", "reshape", "shape", "[-1,-1]", 1, x, "more than one -1");
    expect_error(reg, "reshape_zero", "reshape", "shape", "[2,6,0]", 1, x, "has rank 2");
    expect_error(reg, "flatten_axis", "flatten", "axis", "3", 1, x, "out of range");
    slim_tensor_desc s[] = {DESC(3, 1, 3, 1)};
    expect_error(reg, "not_one", "squeeze", "axes", "[1]", 1, s, "only size-1 axes");
    expect_error(reg, "twice", "squeeze", "axes", "[0,-3]", 1, s, "listed twice");
    return harness_failures() - before;
}

const harness_family harness_family_shape = {"shape", cases, (int)(sizeof cases / sizeof cases[0]),
                                             extra};
