/* tests/ops/cases_pool.c - max_pool, avg_pool and global_avg_pool cases: SAME
 * with odd and even windows, VALID, EXPLICIT pads, ceil_mode, dilation,
 * count_include_pad both ways, channel counts over one backward block, and
 * hand-computed values. */
#include "cases.h"

/* 3x3 image 1..9 and its negation */
static const float img3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float neg3[] = {-1, -2, -3, -4, -5, -6, -7, -8, -9};
/* 4x4 image 1..16 */
static const float img4[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
/* 5x5 image x[i][j] = 5i + j */
static const float img5[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                             13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};

static const float exp_max_valid[] = {6, 8, 14, 16};
/* SAME 2x2/2 on 3x3: the padding row/column is at the bottom/right and never wins */
static const float exp_max_same[] = {5, 6, 8, 9};
static const float exp_max_same_neg[] = {-1, -3, -7, -9};
/* ceil_mode keeps the partial windows at rows/cols 4: maxima at rows/cols {1, 3, 4} */
static const float exp_max_ceil[] = {6, 8, 9, 16, 18, 19, 21, 23, 24};
/* 2x2 dilated by 2: the maximum is the bottom-right tap x[i+2][j+2] */
static const float exp_max_dil[] = {12, 13, 14, 17, 18, 19, 22, 23, 24};
/* avg SAME 2x2/2 on 3x3, padding excluded: 12/4, 9/2, 15/2, 9/1 */
static const float exp_avg_same[] = {3, 4.5f, 7.5f, 9};
/* ... padding counted: 12/4, 9/4, 15/4, 9/4 */
static const float exp_avg_same_incl[] = {3, 2.25f, 3.75f, 2.25f};
/* 3x3/1 with pads 1 on 3x3, padding excluded: corner /4, edge /6, centre /9 */
static const float exp_avg_explicit[] = {3, 3.5f, 4, 4.5f, 5, 5.5f, 6, 6.5f, 7};
/* ... padding counted: every window /9 */
static const float exp_avg_explicit_incl[] = {12.f / 9, 21.f / 9, 16.f / 9, 27.f / 9, 45.f / 9,
                                              33.f / 9, 24.f / 9, 39.f / 9, 28.f / 9};
/* 3x3/2, pads 1, ceil_mode, padding counted, on 4x4 1..16: the last window
 * (rows 3..5) is clipped to the padded image (rows 3..4), so its divisor is 2 per axis */
static const float exp_avg_ceil_incl[] = {14.f / 9, 30.f / 9, 2, 57.f / 9, 11, 6, 4.5f, 7.5f, 4};
/* (1,2,2,2): channel 0 = 1..4, channel 1 = 10..40 */
static const float gx[] = {1, 10, 2, 20, 3, 30, 4, 40};
static const float exp_global[] = {2.5f, 25};

static const harness_case cases[] = {
    /* ---- max_pool: known values ---- */
    {.name = "known_valid",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 4, 4, 1}, .values = img4}},
     .expect = exp_max_valid},
    {.name = "known_same",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3}},
     .expect = exp_max_same},
    {.name = "known_same_negative",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = neg3}},
     .expect = exp_max_same_neg},
    {.name = "known_ceil",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; ceil_mode=true",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 5, 5, 1}, .values = img5}},
     .expect = exp_max_ceil},
    {.name = "known_dilation",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; dilations=[2, 2]",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 5, 5, 1}, .values = img5}},
     .expect = exp_max_dil},
    /* ---- max_pool ---- */
    {.name = "valid_k2s2",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]",
     .n_in = 1,
     .in = {X4(2, 6, 7, 3)}},
    {.name = "same_k3s2",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(1, 7, 5, 4)}},
    {.name = "same_k2s2_odd",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(3, 5, 7, 2)}},
    {.name = "same_k3s1_wide",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; padding=SAME",
     .n_in = 1,
     .in = {X4(1, 5, 6, 40)}},
    {.name = "valid_k3s1",
     .op = "max_pool",
     .attrs = "ksize=[3, 2]",
     .n_in = 1,
     .in = {X4(2, 5, 4, 3)}},
    {.name = "explicit",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=EXPLICIT; pads=[1, 1, 0, 1]",
     .n_in = 1,
     .in = {X4(1, 6, 5, 3)}},
    {.name = "ceil_valid",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; ceil_mode=true",
     .n_in = 1,
     .in = {X4(2, 7, 6, 3)}},
    {.name = "ceil_explicit",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=EXPLICIT; pads=[1, 0, 1, 0]; ceil_mode=true",
     .n_in = 1,
     .in = {X4(1, 6, 6, 2)}},
    {.name = "dilation",
     .op = "max_pool",
     .attrs = "ksize=[2, 2]; dilations=[2, 2]",
     .n_in = 1,
     .in = {X4(1, 8, 7, 3)}},
    {.name = "dilation_same_s2",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; dilations=[2, 1]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(2, 7, 7, 2)}},
    /* the forward's register blocks (32 channels) with dilation, padding and a tail */
    {.name = "dilation_same_c40",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; dilations=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(1, 7, 6, 40)}},
    {.name = "k1s2_subsample",
     .op = "max_pool",
     .attrs = "ksize=[1, 1]; strides=[2, 2]",
     .n_in = 1,
     .in = {X4(2, 7, 6, 5)}},
    {.name = "k1s3_explicit",
     .op = "max_pool",
     .attrs = "ksize=[1, 1]; strides=[3, 2]; padding=EXPLICIT; pads=[1, 0, 2, 1]",
     .n_in = 1,
     .in = {X4(1, 8, 7, 3)}},
    {.name = "k1s2_same_odd",
     .op = "max_pool",
     .attrs = "ksize=[1, 1]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(3, 5, 5, 4)}},
    {.name = "batch3_c33",
     .op = "max_pool",
     .attrs = "ksize=[2, 3]; strides=[1, 2]",
     .n_in = 1,
     .in = {X4(3, 4, 7, 33)}},
    /* taller than a backward band (POOL_BAND rows of dx): windows that
     * straddle two bands, and more channels than one argmax block */
    {.name = "bands_k3s2_same_c40",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(2, 19, 6, 40)}},
    /* ResNet's pool1 shape in small: 64 channels, two blocks of POOL_CBLK
     * through the vector argmax, windows across bands and the image's edge */
    {.name = "bands_k3s2_same_c64",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(2, 19, 9, 64)}},
    /* a 90-tap window, 35 channels: a vector block and 3 by the loop */
    {.name = "k9x10_c35",
     .op = "max_pool",
     .attrs = "ksize=[9, 10]; strides=[2, 3]",
     .n_in = 1,
     .in = {X4(1, 13, 14, 35)}},
    {.name = "bands_dilated_explicit",
     .op = "max_pool",
     .attrs = "ksize=[3, 2]; dilations=[3, 1]; strides=[1, 2]; padding=EXPLICIT; pads=[2, 1, 0, 1]",
     .n_in = 1,
     .in = {X4(1, 21, 5, 3)}},
    {.name = "bands_tiles_k3s3",
     .op = "max_pool",
     .attrs = "ksize=[3, 3]; strides=[3, 3]",
     .n_in = 1,
     .in = {X4(1, 21, 6, 5)}},
    {.name = "bands_ceil_k4s3",
     .op = "max_pool",
     .attrs = "ksize=[4, 2]; strides=[3, 1]; ceil_mode=true",
     .n_in = 1,
     .in = {X4(2, 17, 4, 3)}},

    /* ---- avg_pool: known values ---- */
    {.name = "known_same",
     .op = "avg_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3}},
     .expect = exp_avg_same},
    {.name = "known_same_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]; padding=SAME; count_include_pad=true",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3}},
     .expect = exp_avg_same_incl},
    {.name = "known_explicit",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; padding=EXPLICIT; pads=[1, 1, 1, 1]",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3}},
     .expect = exp_avg_explicit},
    {.name = "known_explicit_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; padding=EXPLICIT; pads=[1, 1, 1, 1]; count_include_pad=true",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3}},
     .expect = exp_avg_explicit_incl},
    {.name = "known_ceil_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=EXPLICIT; pads=[1, 1, 1, 1]; ceil_mode=true; "
              "count_include_pad=true",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 4, 4, 1}, .values = img4}},
     .expect = exp_avg_ceil_incl},
    /* ---- avg_pool ---- */
    {.name = "valid_k2s2",
     .op = "avg_pool",
     .attrs = "ksize=[2, 2]; strides=[2, 2]",
     .n_in = 1,
     .in = {X4(2, 6, 7, 3)}},
    {.name = "same_k3s2",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=SAME",
     .n_in = 1,
     .in = {X4(1, 7, 5, 4)}},
    {.name = "same_k2s1_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[2, 2]; padding=SAME; count_include_pad=true",
     .n_in = 1,
     .in = {X4(3, 5, 4, 2)}},
    {.name = "same_k3s1_wide",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; padding=SAME",
     .n_in = 1,
     .in = {X4(1, 5, 6, 40)}},
    /* two register blocks of channels and a tail (POOL_CB = 32) */
    {.name = "same_k3s1_c72",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; padding=SAME",
     .n_in = 1,
     .in = {X4(2, 5, 4, 72)}},
    /* more than 64 windows cover a pixel: the backward's plain loop */
    {.name = "same_k9s1_c40",
     .op = "avg_pool",
     .attrs = "ksize=[9, 9]; padding=SAME; count_include_pad=true",
     .n_in = 1,
     .in = {X4(1, 10, 9, 40)}},
    {.name = "explicit",
     .op = "avg_pool",
     .attrs = "ksize=[3, 2]; strides=[2, 1]; padding=EXPLICIT; pads=[1, 2, 0, 1]",
     .n_in = 1,
     .in = {X4(2, 6, 5, 3)}},
    {.name = "explicit_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=EXPLICIT; pads=[1, 1, 1, 1]; "
              "count_include_pad=true",
     .n_in = 1,
     .in = {X4(1, 7, 6, 3)}},
    {.name = "ceil_valid",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; ceil_mode=true",
     .n_in = 1,
     .in = {X4(2, 7, 6, 3)}},
    {.name = "ceil_include_pad",
     .op = "avg_pool",
     .attrs = "ksize=[3, 3]; strides=[2, 2]; padding=EXPLICIT; pads=[1, 1, 1, 1]; ceil_mode=true; "
              "count_include_pad=true",
     .n_in = 1,
     .in = {X4(1, 6, 7, 2)}},
    {.name = "window_covers_image",
     .op = "avg_pool",
     .attrs = "ksize=[5, 4]",
     .n_in = 1,
     .in = {X4(3, 5, 4, 3)}},

    /* ---- global_avg_pool ---- */
    {.name = "known",
     .op = "global_avg_pool",
     .attrs = "",
     .n_in = 1,
     .in = {{.rank = 4, .dim = {1, 2, 2, 2}, .values = gx}},
     .expect = exp_global},
    {.name = "keep_dims", .op = "global_avg_pool", .attrs = "", .n_in = 1, .in = {X4(3, 5, 7, 4)}},
    {.name = "flat_c40",
     .op = "global_avg_pool",
     .attrs = "keep_dims=false",
     .n_in = 1,
     .in = {X4(1, 4, 3, 40)}},
    {.name = "batch2_1x1", .op = "global_avg_pool", .attrs = "", .n_in = 1, .in = {X4(2, 1, 1, 5)}},
};

static const harness_family harness_family_pool = {"pool", cases,
                                                   (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_pool)
