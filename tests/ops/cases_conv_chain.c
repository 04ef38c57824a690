/* tests/ops/cases_conv_chain.c - conv2d_chain (inference): against its
 * reference (each output from scratch in double) on 1 and 3 threads, with and
 * without the expanding product, strides 1 and 2, SAME and VALID, odd sizes,
 * bands that wrap the ring of rows and run into the next image, the
 * residual, and a y large enough to be streamed. */
#include "cases.h"

/* MobileNet v1's depthwise -> pointwise: x (N,H,W,C1), w_d, bn, w_b, bn */
#define DW_PW(n, h, w, c1, k, c2)                                                                  \
    X4(n, h, w, c1), X4(k, k, 1, c1), BN_IN(c1), X4(1, 1, c1, c2), BN_IN(c2)
/* MobileNet v2's expand -> depthwise -> project */
#define PW_DW_PW(n, h, w, c0, c1, k, c2)                                                           \
    X4(n, h, w, c0), X4(1, 1, c0, c1), BN_IN(c1), X4(k, k, 1, c1), BN_IN(c1), X4(1, 1, c1, c2),    \
        BN_IN(c2)

static const harness_case cases[] = {
    {.name = "dw_pw_s1_relu6",
     .op = "conv2d_chain",
     .attrs = "depthwise_activation=relu6; activation=relu6",
     .n_in = 11,
     .in = {DW_PW(2, 9, 11, 20, 3, 37)},
     .no_grad = true},
    {.name = "dw_pw_s2_odd_relu",
     .op = "conv2d_chain",
     .attrs = "strides=[2, 2]; depthwise_activation=relu; activation=relu",
     .n_in = 11,
     .in = {DW_PW(3, 13, 7, 16, 3, 24)},
     .no_grad = true},
    /* MobileNet v3's hard_swish (the reference in double) */
    {.name = "dw_pw_s1_hard_swish",
     .op = "conv2d_chain",
     .attrs = "depthwise_activation=hard_swish; activation=hard_swish",
     .n_in = 11,
     .in = {DW_PW(2, 9, 11, 20, 3, 37)},
     .no_grad = true},
    {.name = "expand_s2_hard_swish",
     .op = "conv2d_chain",
     .attrs = "expand=true; expand_activation=hard_swish; strides=[2, 2]; "
              "depthwise_activation=hard_swish",
     .n_in = 16,
     .in = {PW_DW_PW(2, 11, 9, 8, 48, 3, 16)},
     .no_grad = true},
    {.name = "dw_pw_valid_5x5",
     .op = "conv2d_chain",
     .attrs = "padding=VALID; depthwise_activation=relu6",
     .n_in = 11,
     .in = {DW_PW(2, 12, 9, 9, 5, 10)},
     .no_grad = true},
    /* the ring of expanded rows: stride 1, bands of several rows over a
     * tall image (wrapping the ring), then the next image */
    {.name = "expand_s1_ring",
     .op = "conv2d_chain",
     .attrs = "expand=true; expand_activation=relu6; depthwise_activation=relu6",
     .n_in = 16,
     .in = {PW_DW_PW(2, 23, 5, 8, 48, 3, 16)},
     .no_grad = true},
    {.name = "expand_s2_relu6",
     .op = "conv2d_chain",
     .attrs = "expand=true; expand_activation=relu6; strides=[2, 2]; "
              "depthwise_activation=relu6; activation=relu6",
     .n_in = 16,
     .in = {PW_DW_PW(3, 15, 14, 12, 72, 3, 20)},
     .no_grad = true},
    /* a band of several rows on a wide map: few rows per band, 1 output row */
    {.name = "expand_wide_rows",
     .op = "conv2d_chain",
     .attrs = "expand=true; expand_activation=relu; strides=[2, 1]; depthwise_activation=relu",
     .n_in = 16,
     .in = {PW_DW_PW(1, 7, 70, 6, 40, 3, 9)},
     .no_grad = true},
    /* MobileNet v2's residual blocks: y = project + x */
    {.name = "expand_residual",
     .op = "conv2d_chain",
     .attrs = "expand=true; expand_activation=relu6; depthwise_activation=relu6; residual=true",
     .n_in = 17,
     .in = {PW_DW_PW(2, 10, 9, 24, 144, 3, 24), X4(2, 10, 9, 24)},
     .no_grad = true},
    /* y of 17.9 MB: stored past the caches (from 16 MB); 140 channels, so
     * rows alternate 32-byte alignment and the last panel is 12 wide */
    {.name = "dw_pw_streamed",
     .op = "conv2d_chain",
     .attrs = "depthwise_activation=relu6; activation=relu6",
     .n_in = 11,
     .in = {DW_PW(2, 128, 128, 8, 3, 140)},
     .no_grad = true},
    {.name = "dw_pw_residual_relu",
     .op = "conv2d_chain",
     .attrs = "depthwise_activation=relu; residual=true; activation=relu",
     .n_in = 12,
     .in = {DW_PW(2, 6, 6, 32, 3, 32), X4(2, 6, 6, 32)},
     .no_grad = true},
};

static const harness_family harness_family_conv_chain = {
    "conv_chain", cases, (int)(sizeof cases / sizeof cases[0]), NULL};
HARNESS_REGISTER(harness_family_conv_chain)
