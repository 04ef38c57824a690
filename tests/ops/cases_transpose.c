/* tests/ops/cases_transpose.c - transpose over every kind of permutation (NCHW <-> NHWC,
 * channel shuffle's 5-D swap, 2-D, 3-D rotations, the identity) and slice on every axis,
 * with known values for both. */
#include "cases.h"

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float six[] = {1, 2, 3, 4, 5, 6};   /* (2, 3) */
static const float six_t[] = {1, 4, 2, 5, 3, 6}; /* its transpose (3, 2) */
static const float six_c1[] = {2, 3, 5, 6};      /* (2, 3)[:, 1:3] */
static const float six_r1[] = {4, 5};            /* (2, 3)[1:2, 0:2] */
/* (2, 2, 2) = 0..7 with perm (2, 0, 1): y[i][j][k] = x[j][k][i] */
static const float cube[] = {0, 1, 2, 3, 4, 5, 6, 7};
static const float cube_201[] = {0, 2, 4, 6, 1, 3, 5, 7};

static const harness_case cases[] = {
    {CASE("nchw_to_nhwc", "transpose", "perm=[0,2,3,1]", 1, F32(4, 2, 3, 4, 5))},
    {CASE("nhwc_to_nchw", "transpose", "perm=[0,3,1,2]", 1, F32(4, 2, 4, 5, 3))},
    {CASE("shuffle_5d", "transpose", "perm=[0,1,2,4,3]", 1, F32(5, 2, 3, 3, 2, 4))},
    {CASE("matrix", "transpose", "perm=[1,0]", 1, F32(2, 7, 5))},
    {CASE("rotate_3d", "transpose", "perm=[2,0,1]", 1, F32(3, 3, 4, 5))},
    {CASE("identity", "transpose", "perm=[0,1,2]", 1, F32(3, 2, 3, 4))},
    {CASE("reverse_6d", "transpose", "perm=[5,4,3,2,1,0]", 1, F32(6, 2, 1, 3, 2, 1, 3))},
    {CASE("known", "transpose", "perm=[1,0]", 1, VALS(2, six, 2, 3)), .expect = six_t},
    {CASE("known_3d", "transpose", "perm=[2,0,1]", 1, VALS(3, cube, 2, 2, 2)), .expect = cube_201},

    {CASE("channels", "slice", "begin=[0,0,0,2]; size=[-1,-1,-1,3]", 1, F32(4, 2, 3, 4, 6))},
    {CASE("spatial", "slice", "begin=[0,1,2,0]; size=[2,2,1,-1]", 1, F32(4, 2, 4, 5, 3))},
    {CASE("batch_and_all", "slice", "begin=[1,0,1]; size=[1,3,2]", 1, F32(3, 3, 3, 4))},
    {CASE("whole", "slice", "begin=[0,0]; size=[-1,-1]", 1, F32(2, 4, 5))},
    {CASE("known_cols", "slice", "begin=[0,1]; size=[2,2]", 1, VALS(2, six, 2, 3)),
     .expect = six_c1},
    {CASE("known_row", "slice", "begin=[1,0]; size=[1,2]", 1, VALS(2, six, 2, 3)),
     .expect = six_r1},
};

static const harness_family harness_family_transpose = {
    "transpose", cases, (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_transpose)
