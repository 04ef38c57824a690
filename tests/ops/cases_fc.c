/* tests/ops/cases_fc.c - fully_connected and matmul: shapes that split by rows and by
 * columns across threads, every transpose combination, batched and shared (2-D) b. */
#include "cases.h"

#include <string.h>

/* Designated, so that cases may leave any trailing field out. */
#define CASE(nm, o, a, n) .name = nm, .op = o, .attrs = a, .n_in = n

/* y = x w + b by hand: x = [[1,2],[3,4]], w = [[1,0],[-1,2]], b = [0.5,-1]. */
static const float fc_x[] = {1, 2, 3, 4}, fc_w[] = {1, 0, -1, 2}, fc_b[] = {0.5f, -1};
static const float fc_y[] = {-0.5f, 3, -0.5f, 7};

/* 2 a b with a = [[1,2,3],[4,5,6]], b = [[1,0],[0,1],[1,1]]. */
static const float mm_a[] = {1, 2, 3, 4, 5, 6}, mm_b[] = {1, 0, 0, 1, 1, 1};
static const float mm_y[] = {8, 10, 20, 22};

static const harness_case cases[] = {
    /* fully_connected */
    {CASE("basic", "fully_connected", NULL, 3), .in = {F32(2, 4, 5), F32(2, 5, 3), F32(1, 3)}},
    {CASE("no_bias", "fully_connected", NULL, 2), .in = {F32(2, 3, 7), F32(2, 7, 6)}},
    {CASE("batch1_columns", "fully_connected", NULL, 3),
     .in = {F32(2, 1, 9), F32(2, 9, 40), F32(1, 40)}},
    {CASE("flatten_nhwc", "fully_connected", NULL, 3),
     .in = {F32(4, 2, 3, 2, 2), F32(2, 12, 5), F32(1, 5)}},
    {CASE("tall_rows", "fully_connected", NULL, 3), .in = {F32(2, 17, 6), F32(2, 6, 4), F32(1, 4)}},
    {CASE("wide_cols", "fully_connected", NULL, 2), .in = {F32(2, 2, 8), F32(2, 8, 37)}},
    /* the packed micro-kernel paths (ops/fc.c): w in several FC_KC-row blocks
     * with a tail, partial MR x NR blocks, several NR panels of dy^T */
    {CASE("chunks_k300_o45", "fully_connected", NULL, 3),
     .in = {F32(2, 37, 300), F32(2, 300, 45), F32(1, 45)}},
    /* more than FC_COLS columns: two packed column groups */
    {CASE("groups_o600", "fully_connected", NULL, 3),
     .in = {F32(2, 7, 20), F32(2, 20, 600), F32(1, 600)}},
    /* one column panel, many row blocks: forward split by rows between threads */
    {CASE("row_split_n70", "fully_connected", NULL, 3),
     .in = {F32(2, 70, 9), F32(2, 9, 5), F32(1, 5)}},
    /* a large batch: dw walks its dy panels one group at a time */
    {CASE("batch600", "fully_connected", NULL, 2), .in = {F32(2, 600, 13), F32(2, 13, 70)}},
    {CASE("batch1_k1", "fully_connected", NULL, 3),
     .in = {F32(2, 1, 1), F32(2, 1, 33), F32(1, 33)}},
    {CASE("known", "fully_connected", NULL, 3),
     .in = {{.rank = 2, .dim = {2, 2}, .values = fc_x},
            {.rank = 2, .dim = {2, 2}, .values = fc_w},
            {.rank = 1, .dim = {2}, .values = fc_b}},
     .expect = fc_y},

    /* matmul */
    {CASE("basic", "matmul", NULL, 2), .in = {F32(2, 3, 4), F32(2, 4, 5)}},
    {CASE("transpose_a", "matmul", "transpose_a=true", 2), .in = {F32(2, 4, 3), F32(2, 4, 5)}},
    {CASE("transpose_b", "matmul", "transpose_b=true", 2), .in = {F32(2, 3, 4), F32(2, 5, 4)}},
    {CASE("transpose_ab_alpha", "matmul", "transpose_a=true; transpose_b=true; alpha=0.5", 2),
     .in = {F32(2, 4, 3), F32(2, 5, 4)}},
    {CASE("batched", "matmul", NULL, 2), .in = {F32(3, 2, 3, 4), F32(3, 2, 4, 5)}},
    {CASE("batched_4d_tb_alpha", "matmul", "transpose_b=true; alpha=-2", 2),
     .in = {F32(4, 2, 2, 3, 4), F32(4, 2, 2, 5, 4)}},
    {CASE("batched_ta", "matmul", "transpose_a=true", 2), .in = {F32(3, 3, 4, 2), F32(3, 3, 4, 5)}},
    {CASE("shared_b", "matmul", NULL, 2), .in = {F32(3, 3, 2, 4), F32(2, 4, 5)}},
    {CASE("shared_b_ta", "matmul", "transpose_a=true", 2), .in = {F32(3, 3, 4, 2), F32(2, 4, 5)}},
    {CASE("shared_b_tb", "matmul", "transpose_b=true", 2), .in = {F32(3, 3, 2, 4), F32(2, 5, 4)}},
    {CASE("shared_b_ta_tb", "matmul", "transpose_a=true; transpose_b=true; alpha=1.5", 2),
     .in = {F32(3, 3, 4, 2), F32(2, 5, 4)}},
    {CASE("shared_b_ta_rows", "matmul", "transpose_a=true", 2),
     .in = {F32(3, 2, 24, 7), F32(2, 24, 20)}},
    {CASE("row_vector", "matmul", NULL, 2), .in = {F32(2, 1, 6), F32(2, 6, 40)}},
    {CASE("known_alpha", "matmul", "alpha=2", 2),
     .in = {{.rank = 2, .dim = {2, 3}, .values = mm_a}, {.rank = 2, .dim = {3, 2}, .values = mm_b}},
     .expect = mm_y},
};

static int extra(const slim_registry *reg)
{
    int failed = 0;
    slim_tensor_desc fc_k[] = {HARNESS_DESC(2, 2, 5), HARNESS_DESC(2, 4, 3)};
    failed += harness_infer_fails(reg, "fully_connected", "bad_k", NULL, true, fc_k, 2,
                                  "has 5 features per example but the weights (4,3) expect 4");
    slim_tensor_desc fc_bias[] = {HARNESS_DESC(2, 2, 4), HARNESS_DESC(2, 4, 3), HARNESS_DESC(1, 4)};
    failed += harness_infer_fails(reg, "fully_connected", "bad_bias", NULL, true, fc_bias, 3,
                                  "bias (4) must be (3,)");
    slim_tensor_desc mm_k[] = {HARNESS_DESC(2, 2, 3), HARNESS_DESC(2, 4, 5)};
    failed +=
        harness_infer_fails(reg, "matmul", "bad_k", NULL, true, mm_k, 2, "inner dimensions differ");
    slim_tensor_desc mm_kt[] = {HARNESS_DESC(2, 3, 2), HARNESS_DESC(2, 3, 5)};
    failed += harness_infer_fails(reg, "matmul", "bad_k_transposed", "transpose_b=true", true,
                                  mm_kt, 2, "gives K=2, b (3,5) gives K=5");
    slim_tensor_desc mm_batch[] = {HARNESS_DESC(3, 2, 2, 3), HARNESS_DESC(3, 3, 3, 4)};
    failed += harness_infer_fails(reg, "matmul", "bad_batch", NULL, true, mm_batch, 2,
                                  "batch dimensions of a (2,2,3) and b (3,3,4) must be equal");
    return failed;
}

static const harness_family harness_family_fc = {"fc", cases, (int)(sizeof cases / sizeof cases[0]),
                                                 extra};
HARNESS_REGISTER(harness_family_fc)
