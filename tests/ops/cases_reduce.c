/* tests/ops/cases_reduce.c - reduce_mean over spatial axes (global pooling), the last
 * axis (layer statistics), the batch, every axis, with and without keep_dims, negative
 * axes, and known values. */
#include "cases.h"

#define CASE(name_, op_, attrs_, n_, ...)                                                          \
    .name = name_, .op = op_, .attrs = attrs_, .n_in = n_, .in = {__VA_ARGS__}

static const float six[] = {1, 2, 3, 4, 5, 6}; /* (2, 3) */
static const float mean_rows[] = {2, 5}, mean_cols[] = {2.5f, 3.5f, 4.5f}, mean_all[] = {3.5f};

static const harness_case cases[] = {
    {CASE("spatial_nhwc", "reduce_mean", "axes=[1,2]", 1, F32(4, 2, 3, 4, 5))},
    {CASE("spatial_keep", "reduce_mean", "axes=[1,2]; keep_dims=true", 1, F32(4, 2, 3, 3, 4))},
    {CASE("last", "reduce_mean", "axes=[-1]; keep_dims=true", 1, F32(3, 2, 3, 7))},
    {CASE("batch", "reduce_mean", "axes=[0]", 1, F32(3, 4, 3, 2))},
    {CASE("all", "reduce_mean", "axes=[0,1,2]", 1, F32(3, 2, 3, 4))},
    {CASE("middle_5d", "reduce_mean", "axes=[1,3]", 1, F32(5, 2, 3, 2, 3, 2))},
    {CASE("known_rows", "reduce_mean", "axes=[1]", 1, VALS(2, six, 2, 3)), .expect = mean_rows},
    {CASE("known_cols", "reduce_mean", "axes=[0]", 1, VALS(2, six, 2, 3)), .expect = mean_cols},
    {CASE("known_all", "reduce_mean", "axes=[0,1]", 1, VALS(2, six, 2, 3)), .expect = mean_all},
};

static const harness_family harness_family_reduce = {"reduce", cases,
                                                     (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_reduce)
