/* tests/ops/cases_conv.c - conv2d cases: every padding mode, strides, dilation,
 * groups, depthwise, the 1x1 path, several im2col tiles and threads (including
 * the banded backward of a batch smaller than the thread count), and
 * hand-computed values. Gradient cases run in training mode so the fast
 * backward gets its full workspace. */
#include "runtime/oprun.h"
#include "cases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 3x3 image 1..9 */
static const float img3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float ones4[] = {1, 1, 1, 1};
static const float half[] = {0.5f};
/* VALID 2x2 all-ones filter: the sums of the four 2x2 blocks */
static const float exp_valid[] = {12, 16, 24, 28};
/* SAME: pad_total 1 goes to the bottom/right (TensorFlow), plus bias 0.5 */
static const float exp_same[] = {12.5f, 16.5f, 9.5f, 24.5f, 28.5f, 15.5f, 15.5f, 17.5f, 9.5f};
/* 5x5 image x[i][j] = 5i + j */
static const float img5[] = {0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12,
                             13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
/* 2x2 ones dilated by 2, VALID: x[i][j] + x[i][j+2] + x[i+2][j] + x[i+2][j+2] = 4(5i+j) + 24 */
static const float exp_dil[] = {24, 28, 32, 44, 48, 52, 64, 68, 72};
/* explicit pads 1 on each side, stride 2, 3x3 filter 1..9 over img3:
 * (0,0) = 5*1 + 6*2 + 8*4 + 9*5, (0,1) = 4*2 + 5*3 + 7*5 + 8*6,
 * (1,0) = 4*2 + 5*3 + 7*5 + 8*6, (1,1) = 5*1 + 6*2 + 8*4 + 9*5 */
static const float w3[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float exp_explicit[] = {94, 106, 106, 94};
/* depthwise: channel 0 = 1..4 with an all-ones filter, channel 1 = 10..40 with [1,0,0,-1] */
static const float dw_x[] = {1, 10, 2, 20, 3, 30, 4, 40};
static const float dw_w[] = {1, 1, 1, 0, 1, 0, 1, -1};
static const float exp_dw[] = {10, -30};
/* groups 2, 1x1: o0 = x0, o1 = x1, o2 = 2*x2, o3 = 3*x3 */
static const float g_x[] = {1, 2, 3, 4};
static const float g_w[] = {1, 0, 2, 0, 0, 1, 0, 3};
static const float exp_g[] = {1, 2, 6, 12};

static const harness_case cases[] = {
    /* ---- known values ---- */
    {.name = "known_valid_ones",
     .op = "conv2d",
     .attrs = "padding=VALID",
     .n_in = 2,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3},
            {.rank = 4, .dim = {2, 2, 1, 1}, .values = ones4}},
     .training = true,
     .expect = exp_valid},
    {.name = "known_same_ones_bias",
     .op = "conv2d",
     .attrs = "padding=SAME",
     .n_in = 3,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3},
            {.rank = 4, .dim = {2, 2, 1, 1}, .values = ones4},
            {.rank = 1, .dim = {1}, .values = half}},
     .training = true,
     .expect = exp_same},
    {.name = "known_dilation",
     .op = "conv2d",
     .attrs = "padding=VALID; dilations=[2, 2]",
     .n_in = 2,
     .in = {{.rank = 4, .dim = {1, 5, 5, 1}, .values = img5},
            {.rank = 4, .dim = {2, 2, 1, 1}, .values = ones4}},
     .training = true,
     .expect = exp_dil},
    {.name = "known_explicit_s2",
     .op = "conv2d",
     .attrs = "padding=EXPLICIT; pads=[1, 1, 1, 1]; strides=[2, 2]",
     .n_in = 2,
     .in = {{.rank = 4, .dim = {1, 3, 3, 1}, .values = img3},
            {.rank = 4, .dim = {3, 3, 1, 1}, .values = w3}},
     .training = true,
     .expect = exp_explicit},
    {.name = "known_depthwise",
     .op = "conv2d",
     .attrs = "padding=VALID; groups=2",
     .n_in = 2,
     .in = {{.rank = 4, .dim = {1, 2, 2, 2}, .values = dw_x},
            {.rank = 4, .dim = {2, 2, 1, 2}, .values = dw_w}},
     .training = true,
     .expect = exp_dw},
    {.name = "known_groups_1x1",
     .op = "conv2d",
     .attrs = "groups=2",
     .n_in = 2,
     .in = {{.rank = 4, .dim = {1, 1, 1, 4}, .values = g_x},
            {.rank = 4, .dim = {1, 1, 2, 4}, .values = g_w}},
     .training = true,
     .expect = exp_g},

    /* ---- SAME ---- */
    {.name = "same_3x3_bias",
     .op = "conv2d",
     .attrs = "padding=SAME",
     .n_in = 3,
     .in = {X4(1, 7, 5, 3), X4(3, 3, 3, 4), B1(4)},
     .training = true},
    {.name = "same_s2_odd",
     .op = "conv2d",
     .attrs = "padding=SAME; strides=[2, 2]",
     .n_in = 2,
     .in = {X4(3, 7, 5, 2), X4(3, 3, 2, 3)},
     .training = true},
    {.name = "same_s2_even_kernel",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 3,
     .in = {X4(2, 6, 7, 3), X4(2, 2, 3, 4), B1(4)},
     .training = true},
    {.name = "same_k4",
     .op = "conv2d",
     .attrs = "padding=SAME",
     .n_in = 2,
     .in = {X4(1, 5, 5, 2), X4(4, 4, 2, 3)},
     .training = true},
    {.name = "same_k5_batch1",
     .op = "conv2d",
     .attrs = "padding=SAME",
     .n_in = 3,
     .in = {X4(1, 7, 5, 2), X4(5, 5, 2, 3), B1(3)},
     .training = true},
    {.name = "same_s21",
     .op = "conv2d",
     .attrs = "padding=SAME; strides=[2, 1]",
     .n_in = 2,
     .in = {X4(2, 8, 5, 3), X4(3, 2, 3, 2)},
     .training = true},
    /* ---- VALID and EXPLICIT ---- */
    {.name = "valid",
     .op = "conv2d",
     .attrs = "padding=VALID",
     .n_in = 2,
     .in = {X4(2, 7, 6, 3), X4(3, 2, 3, 4)},
     .training = true},
    {.name = "valid_s2_bias",
     .op = "conv2d",
     .attrs = "padding=VALID; strides=[2, 1]",
     .n_in = 3,
     .in = {X4(3, 9, 7, 2), X4(3, 3, 2, 5), B1(5)},
     .training = true},
    {.name = "valid_full_kernel",
     .op = "conv2d",
     .attrs = "padding=VALID",
     .n_in = 3,
     .in = {X4(2, 3, 4, 3), X4(3, 4, 3, 5), B1(5)},
     .training = true},
    {.name = "explicit",
     .op = "conv2d",
     .attrs = "padding=EXPLICIT; pads=[1, 2, 0, 1]; strides=[1, 2]",
     .n_in = 2,
     .in = {X4(1, 6, 5, 3), X4(3, 3, 3, 2)},
     .training = true},
    {.name = "explicit_big_pads",
     .op = "conv2d",
     .attrs = "padding=EXPLICIT; pads=[3, 0, 2, 3]",
     .n_in = 3,
     .in = {X4(2, 4, 3, 2), X4(2, 3, 2, 3), B1(3)},
     .training = true},
    /* ---- dilation ---- */
    {.name = "dilation2_same",
     .op = "conv2d",
     .attrs = "dilations=[2, 2]",
     .n_in = 2,
     .in = {X4(2, 9, 8, 2), X4(3, 3, 2, 3)},
     .training = true},
    {.name = "dilation_valid_s2",
     .op = "conv2d",
     .attrs = "padding=VALID; dilations=[2, 1]; strides=[2, 2]",
     .n_in = 3,
     .in = {X4(1, 8, 7, 3), X4(2, 3, 3, 2), B1(2)},
     .training = true},
    /* ---- groups and depthwise ---- */
    {.name = "groups2",
     .op = "conv2d",
     .attrs = "groups=2",
     .n_in = 3,
     .in = {X4(2, 6, 5, 4), X4(3, 3, 2, 6), B1(6)},
     .training = true},
    {.name = "groups3_s2_valid",
     .op = "conv2d",
     .attrs = "groups=3; strides=[2, 2]; padding=VALID",
     .n_in = 2,
     .in = {X4(1, 7, 7, 6), X4(3, 3, 2, 3)},
     .training = true},
    {.name = "depthwise_bias",
     .op = "conv2d",
     .attrs = "groups=4",
     .n_in = 3,
     .in = {X4(2, 7, 5, 4), X4(3, 3, 1, 4), B1(4)},
     .training = true},
    {.name = "depthwise_s2",
     .op = "conv2d",
     .attrs = "groups=3; strides=[2, 2]",
     .n_in = 2,
     .in = {X4(1, 9, 8, 3), X4(3, 3, 1, 3)},
     .training = true},
    {.name = "depthwise_dil_valid",
     .op = "conv2d",
     .attrs = "groups=3; dilations=[2, 2]; padding=VALID",
     .n_in = 3,
     .in = {X4(2, 8, 7, 3), X4(3, 2, 1, 3), B1(3)},
     .training = true},
    {.name = "depthwise_explicit",
     .op = "conv2d",
     .attrs = "groups=5; padding=EXPLICIT; pads=[0, 1, 2, 1]",
     .n_in = 2,
     .in = {X4(3, 6, 6, 5), X4(2, 3, 1, 5)},
     .training = true},
    {.name = "depthwise_c100_blocks",
     .op = "conv2d",
     .attrs = "groups=100; padding=SAME",
     .n_in = 3,
     .in = {X4(2, 5, 6, 100), X4(3, 3, 1, 100), B1(100)},
     .training = true},
    /* rows wide enough for the register kernel's four-pixel blocks and the
     * pixels after them, between the border columns: strides, dilation,
     * one-column filters, channel counts with a masked last vector */
    {.name = "depthwise_wide_s2",
     .op = "conv2d",
     .attrs = "groups=40; strides=[2, 2]",
     .n_in = 3,
     .in = {X4(2, 7, 21, 40), X4(3, 3, 1, 40), B1(40)},
     .training = true},
    {.name = "depthwise_wide_dil",
     .op = "conv2d",
     .attrs = "groups=17; dilations=[1, 2]",
     .n_in = 2,
     .in = {X4(1, 5, 19, 17), X4(3, 3, 1, 17)},
     .training = true},
    {.name = "depthwise_wide_kw1",
     .op = "conv2d",
     .attrs = "groups=16; padding=VALID",
     .n_in = 2,
     .in = {X4(1, 6, 11, 16), X4(3, 1, 1, 16)},
     .training = true},
    /* ---- short filter rows (KW*C <= SEG_MAX_RUN): a padded band of the image
     * read in place, tiles that cross images, strides, explicit pads, row
     * dilation, a masked last panel ---- */
    {.name = "seg_5x5_c1_o32_same",
     .op = "conv2d",
     .n_in = 3,
     .in = {X4(3, 9, 11, 1), X4(5, 5, 1, 32), B1(32)},
     .training = true},
    {.name = "seg_3x3_c3_o40_s2",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 2,
     .in = {X4(2, 13, 15, 3), X4(3, 3, 3, 40)},
     .training = true},
    {.name = "seg_7x7_c3_o20_s2_explicit",
     .op = "conv2d",
     .attrs = "padding=EXPLICIT; pads=[3, 2, 1, 3]; strides=[2, 2]",
     .n_in = 3,
     .in = {X4(2, 12, 11, 3), X4(7, 7, 3, 20), B1(20)},
     .training = true},
    {.name = "seg_dilated_rows_valid",
     .op = "conv2d",
     .attrs = "padding=VALID; dilations=[2, 1]; strides=[1, 2]",
     .n_in = 2,
     .in = {X4(4, 10, 13, 2), X4(3, 3, 2, 24)},
     .training = true},
    {.name = "seg_bn_res_relu",
     .op = "conv2d",
     .attrs = "batch_norm=true; activation=relu; residual=true",
     .n_in = 7,
     .in = {X4(2, 8, 9, 3), X4(3, 3, 3, 24), BN_IN(24), X4(2, 8, 9, 24)},
     .no_grad = true},
    {.name = "depthwise_multiplier",
     .op = "conv2d",
     .attrs = "groups=3",
     .n_in = 3,
     .in = {X4(1, 5, 5, 3), X4(3, 3, 1, 6), B1(6)},
     .training = true},
    /* ---- 1x1 ---- */
    {.name = "pointwise_bias",
     .op = "conv2d",
     .attrs = "",
     .n_in = 3,
     .in = {X4(2, 5, 7, 6), X4(1, 1, 6, 4), B1(4)},
     .training = true},
    {.name = "pointwise_groups",
     .op = "conv2d",
     .attrs = "groups=2",
     .n_in = 2,
     .in = {X4(1, 4, 5, 6), X4(1, 1, 3, 4)},
     .training = true},
    {.name = "pointwise_s2",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 2,
     .in = {X4(1, 7, 5, 4), X4(1, 1, 4, 3)},
     .training = true},
    {.name = "pointwise_explicit",
     .op = "conv2d",
     .attrs = "padding=EXPLICIT; pads=[1, 0, 0, 1]",
     .n_in = 2,
     .in = {X4(2, 3, 4, 3), X4(1, 1, 3, 2)},
     .training = true},
    /* ---- several tiles and threads; banded backward (N < threads) and the
     * hybrid of whole images plus one banded image (N = 4 on 3 threads) ---- */
    {.name = "tiles_n2_12x12",
     .op = "conv2d",
     .attrs = "",
     .n_in = 3,
     .in = {X4(2, 12, 12, 8), X4(3, 3, 8, 16), B1(16)},
     .training = true},
    {.name = "tiles_n1_s2",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 2,
     .in = {X4(1, 13, 11, 5), X4(3, 3, 5, 7)},
     .training = true},
    {.name = "hybrid_n4",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 3,
     .in = {X4(4, 5, 6, 3), X4(3, 3, 3, 2), B1(2)},
     .training = true},
    {.name = "band_dilated",
     .op = "conv2d",
     .attrs = "dilations=[2, 2]",
     .n_in = 2,
     .in = {X4(1, 9, 7, 3), X4(3, 3, 3, 4)},
     .training = true},
    {.name = "tiles_groups",
     .op = "conv2d",
     .attrs = "groups=2; padding=VALID",
     .n_in = 3,
     .in = {X4(3, 10, 9, 4), X4(3, 3, 2, 6), B1(6)},
     .training = true},
    /* fewer GEMM rows than depth: dW split by K rows between threads */
    {.name = "ksplit_valid_fc6_like",
     .op = "conv2d",
     .attrs = "padding=VALID",
     .n_in = 3,
     .in = {X4(2, 3, 3, 8), X4(3, 3, 8, 5), B1(5)},
     .training = true},
    {.name = "ksplit_same_n1",
     .op = "conv2d",
     .attrs = "",
     .n_in = 2,
     .in = {X4(1, 4, 3, 6), X4(3, 3, 6, 4)},
     .training = true},
    {.name = "ksplit_pointwise",
     .op = "conv2d",
     .attrs = "",
     .n_in = 3,
     .in = {X4(1, 2, 2, 40), X4(1, 1, 40, 6), B1(6)},
     .training = true},
    {.name = "ksplit_groups",
     .op = "conv2d",
     .attrs = "groups=2",
     .n_in = 2,
     .in = {X4(1, 3, 3, 8), X4(3, 3, 4, 6)},
     .training = true},
    /* inference: forward-only workspace */
    {.name = "inference",
     .op = "conv2d",
     .attrs = "strides=[2, 2]",
     .n_in = 3,
     .in = {X4(2, 7, 6, 3), X4(3, 3, 3, 4), B1(4)}},
    {.name = "inference_depthwise",
     .op = "conv2d",
     .attrs = "groups=3",
     .n_in = 2,
     .in = {X4(1, 6, 5, 3), X4(3, 3, 1, 3)}},
    /* inference with a folded batch norm and/or an activation (what the
     * compiler fuses), on every kernel path: the reference applies the
     * batch norm in double after the sum */
    {.name = "bn_gemm_s2_bias_relu",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; batch_norm=true; batch_norm_epsilon=0.01; activation=relu",
     .n_in = 7,
     .in = {X4(2, 9, 8, 5), X4(3, 3, 5, 20), B1(20), BN_IN(20)},
     .no_grad = true},
    {.name = "bn_direct_rows_s2_relu6",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; batch_norm=true; activation=relu6",
     .n_in = 6,
     .in = {X4(2, 9, 10, 40), X4(3, 3, 40, 36), BN_IN(36)},
     .no_grad = true},
    {.name = "bn_pointwise_chunks_relu",
     .op = "conv2d",
     .attrs = "batch_norm=true; activation=relu",
     .n_in = 6,
     .in = {X4(2, 5, 7, 300), X4(1, 1, 300, 40), BN_IN(40)},
     .no_grad = true},
    {.name = "bn_wino_bias_relu",
     .op = "conv2d",
     .attrs = "batch_norm=true; activation=relu",
     .n_in = 7,
     .in = {X4(2, 9, 11, 32), X4(3, 3, 32, 40), B1(40), BN_IN(40)},
     .no_grad = true},
    {.name = "bn_wino_narrow_none",
     .op = "conv2d",
     .attrs = "batch_norm=true; winograd=on",
     .n_in = 6,
     .in = {X4(1, 6, 7, 5), X4(3, 3, 5, 3), BN_IN(3)},
     .no_grad = true},
    {.name = "bn_depthwise_relu6",
     .op = "conv2d",
     .attrs = "groups=24; batch_norm=true; activation=relu6",
     .n_in = 6,
     .in = {X4(2, 7, 6, 24), X4(3, 3, 1, 24), BN_IN(24)},
     .no_grad = true},
    /* channel counts through the register kernel's 4-, 2- and 1-vector
     * blocks and a masked tail (AVX-512 and AVX2 alike) */
    {.name = "bn_depthwise_c100_s2_relu",
     .op = "conv2d",
     .attrs = "groups=100; strides=[2, 2]; batch_norm=true; activation=relu",
     .n_in = 7,
     .in = {X4(2, 7, 8, 100), X4(3, 3, 1, 100), B1(100), BN_IN(100)},
     .no_grad = true},
    {.name = "bn_depthwise_5x5_wide_relu6",
     .op = "conv2d",
     .attrs = "groups=48; batch_norm=true; activation=relu6",
     .n_in = 7,
     .in = {X4(2, 6, 23, 48), X4(5, 5, 1, 48), B1(48), BN_IN(48)},
     .no_grad = true},
    {.name = "bn_depthwise_c40_res",
     .op = "conv2d",
     .attrs = "groups=40; batch_norm=true; residual=true",
     .n_in = 7,
     .in = {X4(1, 5, 6, 40), X4(3, 3, 1, 40), BN_IN(40), X4(1, 5, 6, 40)},
     .no_grad = true},
    {.name = "bn_groups_bias",
     .op = "conv2d",
     .attrs = "groups=2; batch_norm=true",
     .n_in = 7,
     .in = {X4(1, 6, 6, 8), X4(3, 3, 4, 6), B1(6), BN_IN(6)},
     .no_grad = true},
    {.name = "bn_fc_window_relu",
     .op = "conv2d",
     .attrs = "padding=VALID; batch_norm=true; activation=relu",
     .n_in = 6,
     .in = {X4(5, 3, 3, 8), X4(3, 3, 8, 12), BN_IN(12)},
     .no_grad = true},
    {.name = "relu_only_bias",
     .op = "conv2d",
     .attrs = "activation=relu",
     .n_in = 3,
     .in = {X4(2, 8, 8, 16), X4(3, 3, 16, 24), B1(24)},
     .no_grad = true},
    {.name = "relu6_only_wino",
     .op = "conv2d",
     .attrs = "activation=relu6; winograd=on",
     .n_in = 2,
     .in = {X4(1, 8, 8, 16), X4(3, 3, 16, 24)},
     .no_grad = true},
    /* hard_swish (MobileNet v3), which conv2d_post takes in too (ops/act.h),
     * on the gemm, direct, Winograd, depthwise and residual paths */
    {.name = "bn_gemm_s2_bias_hard_swish",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; batch_norm=true; activation=hard_swish",
     .n_in = 7,
     .in = {X4(2, 9, 8, 5), X4(3, 3, 5, 20), B1(20), BN_IN(20)},
     .no_grad = true},
    {.name = "bn_direct_rows_s2_hard_swish",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; batch_norm=true; activation=hard_swish",
     .n_in = 6,
     .in = {X4(2, 9, 10, 40), X4(3, 3, 40, 36), BN_IN(36)},
     .no_grad = true},
    {.name = "bn_pointwise_chunks_hard_swish",
     .op = "conv2d",
     .attrs = "batch_norm=true; activation=hard_swish",
     .n_in = 6,
     .in = {X4(2, 5, 7, 300), X4(1, 1, 300, 40), BN_IN(40)},
     .no_grad = true},
    {.name = "wino_bias_hard_swish",
     .op = "conv2d",
     .attrs = "activation=hard_swish; winograd=on",
     .n_in = 3,
     .in = {X4(2, 9, 11, 32), X4(3, 3, 32, 40), B1(40)},
     .no_grad = true},
    {.name = "bn_depthwise_c100_s2_hard_swish",
     .op = "conv2d",
     .attrs = "groups=100; strides=[2, 2]; batch_norm=true; activation=hard_swish",
     .n_in = 7,
     .in = {X4(2, 7, 8, 100), X4(3, 3, 1, 100), B1(100), BN_IN(100)},
     .no_grad = true},
    {.name = "bn_depthwise_5x5_wide_hard_swish",
     .op = "conv2d",
     .attrs = "groups=48; batch_norm=true; activation=hard_swish",
     .n_in = 7,
     .in = {X4(2, 6, 23, 48), X4(5, 5, 1, 48), B1(48), BN_IN(48)},
     .no_grad = true},
    {.name = "res_pointwise_chunks_bn_hard_swish",
     .op = "conv2d",
     .attrs = "batch_norm=true; residual=true; activation=hard_swish",
     .n_in = 7,
     .in = {X4(2, 5, 7, 300), X4(1, 1, 300, 40), BN_IN(40), X4(2, 5, 7, 40)},
     .no_grad = true},
    /* a residual added before the activation (ResNet's add + relu) */
    {.name = "res_gemm_s2_bias_bn_relu",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; batch_norm=true; residual=true; activation=relu",
     .n_in = 8,
     .in = {X4(2, 9, 8, 5), X4(3, 3, 5, 20), B1(20), BN_IN(20), X4(2, 5, 4, 20)},
     .no_grad = true},
    {.name = "res_pointwise_chunks_bn_relu",
     .op = "conv2d",
     .attrs = "batch_norm=true; residual=true; activation=relu",
     .n_in = 7,
     .in = {X4(2, 5, 7, 300), X4(1, 1, 300, 40), BN_IN(40), X4(2, 5, 7, 40)},
     .no_grad = true},
    {.name = "res_direct_rows_s2_none",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; residual=true",
     .n_in = 3,
     .in = {X4(2, 9, 10, 40), X4(3, 3, 40, 36), X4(2, 5, 5, 36)},
     .no_grad = true},
    {.name = "res_wino_bias_relu",
     .op = "conv2d",
     .attrs = "residual=true; activation=relu",
     .n_in = 4,
     .in = {X4(2, 9, 11, 32), X4(3, 3, 32, 40), B1(40), X4(2, 9, 11, 40)},
     .no_grad = true},
    {.name = "res_wino_narrow_bn_relu6",
     .op = "conv2d",
     .attrs = "batch_norm=true; residual=true; winograd=on; activation=relu6",
     .n_in = 7,
     .in = {X4(1, 6, 7, 5), X4(3, 3, 5, 3), BN_IN(3), X4(1, 6, 7, 3)},
     .no_grad = true},
    {.name = "res_depthwise",
     .op = "conv2d",
     .attrs = "groups=24; residual=true",
     .n_in = 3,
     .in = {X4(2, 7, 6, 24), X4(3, 3, 1, 24), X4(2, 7, 6, 24)},
     .no_grad = true},
    /* y written over the residual (set_in_place): one depth chunk, no narrow last panel */
    {.name = "res_pointwise_inplace_bn_relu",
     .op = "conv2d",
     .attrs = "batch_norm=true; residual=true; activation=relu",
     .n_in = 7,
     .in = {X4(2, 7, 9, 64), X4(1, 1, 64, 48), BN_IN(48), X4(2, 7, 9, 48)},
     .no_grad = true},
    {.name = "res_pointwise_inplace_tail12_bias_relu6",
     .op = "conv2d",
     .attrs = "residual=true; activation=relu6",
     .n_in = 4,
     .in = {X4(3, 5, 6, 40), X4(1, 1, 40, 44), B1(44), X4(3, 5, 6, 44)},
     .no_grad = true},
    {.name = "res_im2col_s2_inplace_bias_relu",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; residual=true; activation=relu",
     .n_in = 4,
     .in = {X4(2, 11, 9, 20), X4(3, 3, 20, 32), B1(32), X4(2, 6, 5, 32)},
     .no_grad = true},
    {.name = "res_im2col_s2_inplace_groups_bn",
     .op = "conv2d",
     .attrs = "strides=[2, 2]; groups=2; batch_norm=true; residual=true",
     .n_in = 7,
     .in = {X4(2, 9, 10, 40), X4(3, 3, 20, 64), BN_IN(64), X4(2, 5, 5, 64)},
     .no_grad = true},
    {.name = "res_fc_window_bn_relu",
     .op = "conv2d",
     .attrs = "padding=VALID; batch_norm=true; residual=true; activation=relu",
     .n_in = 7,
     .in = {X4(5, 3, 3, 8), X4(3, 3, 8, 12), BN_IN(12), X4(5, 1, 1, 12)},
     .no_grad = true},
};

/* Infer must reject these with a message containing the given text. */
static int conv_errors(const slim_registry *reg)
{
    static const struct {
        const char *name, *attrs, *want;
        int n_in;
        slim_tensor_desc in[7];
        bool training;
    } bad[] = {
        {"batch-norm inputs without batch_norm",
         "",
         "batch_norm=true",
         6,
         {{SLIM_F32, X4(1, 5, 5, 3)},
          {SLIM_F32, X4(3, 3, 3, 4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)}},
         false},
        {"batch_norm with 3 inputs",
         "batch_norm=true",
         "(6 to 7 inputs), got 3",
         3,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}, {SLIM_F32, B1(4)}},
         false},
        {"moving_var shape",
         "batch_norm=true",
         "moving_var must be (4)",
         7,
         {{SLIM_F32, X4(1, 5, 5, 3)},
          {SLIM_F32, X4(3, 3, 3, 4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(5)}},
         false},
        {"batch_norm in training",
         "batch_norm=true",
         "for inference",
         6,
         {{SLIM_F32, X4(1, 5, 5, 3)},
          {SLIM_F32, X4(3, 3, 3, 4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)},
          {SLIM_F32, B1(4)}},
         true},
        {"residual shape",
         "residual=true",
         "the residual (1,5,5,5) must have the output's shape (1,5,5,4)",
         3,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}, {SLIM_F32, X4(1, 5, 5, 5)}},
         false},
        {"activation in training",
         "activation=relu",
         "for inference",
         2,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}},
         true},
        {"channel mismatch",
         "",
         "do not match",
         2,
         {{SLIM_F32, X4(2, 8, 8, 3)}, {SLIM_F32, X4(3, 3, 4, 16)}},
         false},
        {"groups do not divide",
         "groups=2",
         "must divide",
         2,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 1, 4)}},
         false},
        {"bias shape",
         "",
         "b must be",
         3,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}, {SLIM_F32, B1(5)}},
         false},
        {"valid too small",
         "padding=VALID",
         "smaller than",
         2,
         {{SLIM_F32, X4(1, 2, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}},
         false},
        {"pads without EXPLICIT",
         "pads=[1, 1, 1, 1]",
         "EXPLICIT",
         2,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}},
         false},
        {"rank",
         "",
         "(N,H,W,C)",
         2,
         {{SLIM_F32, {3, {5, 5, 3}}}, {SLIM_F32, X4(3, 3, 3, 4)}},
         false},
        {"strides length",
         "strides=[2]",
         "strides",
         2,
         {{SLIM_F32, X4(1, 5, 5, 3)}, {SLIM_F32, X4(3, 3, 3, 4)}},
         false},
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        failed += harness_infer_fails(reg, "conv2d", bad[i].name, bad[i].attrs, bad[i].training,
                                      bad[i].in, bad[i].n_in, bad[i].want);
    return failed;
}

/* Backward at 3 threads twice gives bit-identical gradients (fixed-order
 * reductions), and a NULL output gradient gives zero input gradients. */
static int conv_backward_determinism(const slim_registry *reg, const char *attrs_text,
                                     const slim_tensor_desc *in, const char *label)
{
    slim_attrs *a = slim_attrs_new();
    if (*attrs_text) {
        char key[32];
        const char *eq = strchr(attrs_text, '=');
        snprintf(key, sizeof key, "%.*s", (int)(eq - attrs_text), attrs_text);
        slim_attrs_set_text(a, key, eq + 1);
    }
    slim__oprun *r = NULL;
    slim_error err = {0};
    int failed = 0;
    if (slim__oprun_new(reg, "conv2d", a, in, 3, true, 3, &r, &err) != SLIM_OK) {
        harness_ok(false, "conv2d/%s: infer: %s", label, err.msg);
        slim_attrs_free(a);
        return 1;
    }
    float *data[3], *din[3], *din2[3];
    int64_t n[3];
    uint64_t s = 88172645463325252ull;
    for (int i = 0; i < 3; i++) {
        n[i] = slim_shape_numel(&in[i].shape);
        data[i] =
            malloc((size_t)n[i] * sizeof(float) + 256 /* BLIS over-reads, see engine/gemm.h */);
        din[i] =
            malloc((size_t)n[i] * sizeof(float) + 256 /* BLIS over-reads, see engine/gemm.h */);
        din2[i] =
            malloc((size_t)n[i] * sizeof(float) + 256 /* BLIS over-reads, see engine/gemm.h */);
        for (int64_t k = 0; k < n[i]; k++) {
            s ^= s << 13, s ^= s >> 7, s ^= s << 17;
            data[i][k] = (float)(s >> 40) / 16777216.0f - 0.5f;
        }
    }
    slim_tensor y = {0};
    slim__oprun_forward(r, (void *const *)data, false, 1, 0, 0);
    y = slim__oprun_output(r, 0);
    int64_t ny = slim_shape_numel(&y.shape);
    float *dy = malloc((size_t)ny * sizeof(float) + 256);
    for (int64_t k = 0; k < ny; k++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        dy[k] = (float)(s >> 40) / 16777216.0f - 0.5f;
    }
    const float *dout[1] = {dy};
    slim__oprun_backward(r, (void *const *)data, dout, din, false, 1, 0);
    slim__oprun_backward(r, (void *const *)data, dout, din2, false, 1, 0);
    bool same = true;
    for (int i = 0; i < 3; i++)
        same = same && memcmp(din[i], din2[i], (size_t)n[i] * sizeof(float)) == 0;
    harness_ok(same, "conv2d/%s: backward 3 threads twice is bit-identical", label);
    failed += !same;

    const float *none[1] = {NULL};
    slim__oprun_backward(r, (void *const *)data, none, din, false, 1, 0);
    bool zero = true;
    for (int i = 0; i < 3; i++)
        for (int64_t k = 0; k < n[i]; k++)
            zero = zero && din[i][k] == 0.0f;
    harness_ok(zero, "conv2d/%s: zero output gradient gives zero input gradients", label);
    failed += !zero;

    for (int i = 0; i < 3; i++) {
        free(data[i]);
        free(din[i]);
        free(din2[i]);
    }
    free(dy);
    slim__oprun_free(r);
    slim_attrs_free(a);
    return failed;
}

static int conv_extra(const slim_registry *reg)
{
    int failed = conv_errors(reg);
    const slim_tensor_desc gemm[3] = {
        {SLIM_F32, X4(2, 12, 12, 8)}, {SLIM_F32, X4(3, 3, 8, 16)}, {SLIM_F32, B1(16)}};
    const slim_tensor_desc hybrid[3] = {
        {SLIM_F32, X4(4, 9, 7, 5)}, {SLIM_F32, X4(3, 3, 5, 6)}, {SLIM_F32, B1(6)}};
    const slim_tensor_desc dw[3] = {
        {SLIM_F32, X4(1, 9, 7, 8)}, {SLIM_F32, X4(3, 3, 1, 8)}, {SLIM_F32, B1(8)}};
    const slim_tensor_desc pw[3] = {
        {SLIM_F32, X4(2, 6, 5, 8)}, {SLIM_F32, X4(1, 1, 8, 5)}, {SLIM_F32, B1(5)}};
    failed += conv_backward_determinism(reg, "", gemm, "determinism_gemm");
    failed += conv_backward_determinism(reg, "strides=[2, 2]", hybrid, "determinism_hybrid");
    failed += conv_backward_determinism(reg, "groups=8", dw, "determinism_depthwise");
    failed += conv_backward_determinism(reg, "", pw, "determinism_pointwise");
    return failed;
}

static const harness_family harness_family_conv = {
    "conv", cases, (int)(sizeof cases / sizeof cases[0]), conv_extra};
HARNESS_REGISTER(harness_family_conv)
