/* tests/ops/cases_loss.c - softmax_cross_entropy (label smoothing, offsets, i32/i64
 * labels, out-of-range labels), l2_loss and in_top_k (ties, k = 2), with known values. */
#include "harness.h"

#include <string.h>

/* Designated, so that cases may leave any trailing field out. */
#define CASE(nm, o, a, n) .name = nm, .op = o, .attrs = a, .n_in = n

#define LOGITS(n, k)                                                                               \
    {                                                                                              \
        .rank = 2, .dim = {n, k}, .lo = -3, .hi = 3                                                \
    }
#define LABELS(t, n, k)                                                                            \
    {                                                                                              \
        .dtype = t, .rank = 1, .dim = {n}, .lo = 0, .hi = k                                        \
    }

/*
 * logits [[0,0,0],[1,2,3]], labels [0,2]:
 *   row 0: log 3 = 1.0986123; row 1: log(e^-2 + e^-1 + 1) = 0.40760596
 *   mean 0.75310913.
 * label_smoothing 0.3 (targets ls/K = 0.1 plus 0.7 on the label): row 0 is
 * still log 3; row 1 = 0.40760596 - 0.7 * 0 - 0.1 * (-2 - 1 + 0) = 0.70760596;
 *   mean 0.90310913.
 * labels [0,5] with K = 3: row 1 is out of range and counts as zero: 0.54930615.
 */
static const float xe_logits[] = {0, 0, 0, 1, 2, 3};
static const int64_t xe_labels[] = {0, 2}, xe_bad_labels[] = {0, 5}, xe_offset_labels[] = {1, 3};
static const float xe_plain[] = {0.75310913f}, xe_smooth[] = {0.90310913f};
/* the plain loss with weight=0.4 (TF-Slim's auxiliary-logits weight) */
static const float xe_weighted[] = {0.4f * 0.75310913f};
static const float xe_bad[] = {0.54930615f};

/* 2 * (1 + 4 + 9) / 2 */
static const float l2_x[] = {1, 2, -3}, l2_want[] = {14};

/*
 * predictions (5,4), labels [1,0,2,0,2]:
 *   row 0 [0.1 0.5 0.2 0.2] label 1: nothing higher            -> top 1
 *   row 1 [0.3 0.3 0.1 0.2] label 0: a tie, nothing strictly higher -> top 1
 *   row 2 [0.9 0.1 0.5 0.4] label 2: one higher                 -> top 2 only
 *   row 3 [0.1 0.4 0.3 0.2] label 0: three higher              -> neither
 *   row 4 [0.5 0.5 0.5 0.5] label 2: all tied                   -> top 1
 * k=1: 3/5, k=2: 4/5, k=4: 5/5. Labels [1,0,2,0,9]: row 4 is out of range: k=2 gives 3/5.
 */
static const float tk_pred[] = {0.1f, 0.5f, 0.2f, 0.2f, 0.3f, 0.3f, 0.1f, 0.2f, 0.9f, 0.1f,
                                0.5f, 0.4f, 0.1f, 0.4f, 0.3f, 0.2f, 0.5f, 0.5f, 0.5f, 0.5f};
static const int64_t tk_labels[] = {1, 0, 2, 0, 2}, tk_bad_labels[] = {1, 0, 2, 0, 9};
static const float tk_k1[] = {0.6f}, tk_k2[] = {0.8f}, tk_k4[] = {1.0f}, tk_bad[] = {0.6f};

#define XE_KNOWN(name, attrs, labels, want)                                                        \
    {                                                                                              \
        CASE(name, "softmax_cross_entropy", attrs, 2),                                             \
            .in = {{.rank = 2, .dim = {2, 3}, .values = xe_logits},                                \
                   {.dtype = SLIM_I32, .rank = 1, .dim = {2}, .ivalues = labels}},                 \
            .expect = want                                                                         \
    }
#define TK_KNOWN(name, attrs, labels, want)                                                        \
    {                                                                                              \
        CASE(name, "in_top_k", attrs, 2),                                                          \
            .in = {{.rank = 2, .dim = {5, 4}, .values = tk_pred},                                  \
                   {.dtype = SLIM_I64, .rank = 1, .dim = {5}, .ivalues = labels}},                 \
            .no_grad = true, .expect = want                                                        \
    }

static const harness_case cases[] = {
    /* softmax_cross_entropy */
    {CASE("basic", "softmax_cross_entropy", NULL, 2), .in = {LOGITS(4, 5), LABELS(SLIM_I32, 4, 5)}},
    {CASE("i64_labels", "softmax_cross_entropy", NULL, 2),
     .in = {LOGITS(3, 7), LABELS(SLIM_I64, 3, 7)}},
    {CASE("smoothing", "softmax_cross_entropy", "label_smoothing=0.1", 2),
     .in = {LOGITS(5, 4), LABELS(SLIM_I32, 5, 4)}},
    {CASE("offset", "softmax_cross_entropy", "labels_offset=1", 2),
     .in = {LOGITS(6, 5), {.dtype = SLIM_I32, .rank = 1, .dim = {6}, .lo = 1, .hi = 6}}},
    {CASE("batch1", "softmax_cross_entropy", "label_smoothing=0.2", 2),
     .in = {LOGITS(1, 10), LABELS(SLIM_I64, 1, 10)}},
    {CASE("many_rows", "softmax_cross_entropy", NULL, 2),
     .in = {LOGITS(13, 3), LABELS(SLIM_I32, 13, 3)}},
    XE_KNOWN("known", NULL, xe_labels, xe_plain),
    XE_KNOWN("known_smoothing", "label_smoothing=0.3", xe_labels, xe_smooth),
    XE_KNOWN("known_offset", "labels_offset=1", xe_offset_labels, xe_plain),
    XE_KNOWN("known_out_of_range", NULL, xe_bad_labels, xe_bad),
    XE_KNOWN("known_weighted", "weight=0.4", xe_labels, xe_weighted),
    {CASE("weighted_smoothing", "softmax_cross_entropy", "weight=0.4; label_smoothing=0.1", 2),
     .in = {LOGITS(5, 4), LABELS(SLIM_I32, 5, 4)}},

    /* l2_loss */
    {CASE("basic", "l2_loss", NULL, 1), .in = {{.rank = 2, .dim = {3, 4}}}},
    {CASE("scaled_4d", "l2_loss", "scale=0.5", 1), .in = {{.rank = 4, .dim = {2, 3, 4, 5}}}},
    {CASE("scalar", "l2_loss", NULL, 1), .in = {{.rank = 0}}},
    {CASE("long", "l2_loss", "scale=0.01", 1), .in = {{.rank = 1, .dim = {1000}}}, .fwd_tol = 1e-5},
    {CASE("known", "l2_loss", "scale=2", 1), .in = {{.rank = 1, .dim = {3}, .values = l2_x}},
     .expect = l2_want},

    /* in_top_k */
    {CASE("random_k3", "in_top_k", "k=3", 2), .in = {LOGITS(9, 10), LABELS(SLIM_I32, 9, 10)},
     .no_grad = true},
    TK_KNOWN("known_k1_ties", NULL, tk_labels, tk_k1),
    TK_KNOWN("known_k2", "k=2", tk_labels, tk_k2),
    TK_KNOWN("known_k4", "k=4", tk_labels, tk_k4),
    TK_KNOWN("known_out_of_range", "k=2", tk_bad_labels, tk_bad),
};

static int extra(const slim_registry *reg)
{
    int failed = 0;
    slim_tensor_desc rows[] = {{SLIM_F32, {2, {2, 5}}}, {SLIM_I32, {1, {3}}}};
    failed += harness_infer_fails(reg, "softmax_cross_entropy", "label_count", NULL, true, rows, 2,
                                  "labels (3) must be (2,), one per row of logits (2,5)");
    slim_tensor_desc ftype[] = {{SLIM_F32, {2, {2, 5}}}, {SLIM_F32, {1, {2}}}};
    failed += harness_infer_fails(reg, "softmax_cross_entropy", "float_labels", NULL, true, ftype,
                                  2, "labels must be i32 or i64");
    slim_tensor_desc rank3[] = {{SLIM_F32, {3, {2, 5, 1}}}, {SLIM_I64, {1, {2}}}};
    failed += harness_infer_fails(reg, "in_top_k", "rank3", NULL, true, rank3, 2,
                                  "predictions (2,5,1) must be (N,K)");
    return failed;
}

static const harness_family harness_family_loss = {"loss", cases,
                                                   (int)(sizeof cases / sizeof cases[0]), extra};
HARNESS_REGISTER(harness_family_loss)
