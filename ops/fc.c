/*
 * ops/fc.c - dense products: fully_connected and matmul.
 *
 * fully_connected runs on the conv kernels' register-blocked micro-kernels
 * (ops/conv_ukr.h). Its three products have one big operand, the weights
 * (K x O), and small ones (the batch), so each is arranged to stream w once,
 * in its own layout, with the small operand where the kernels want it:
 *   y  = x w:      w copied in blocks of FC_KC rows into NR-column panels,
 *                  x rows read in place (ukr_nn);
 *   dx = dy w^T:   computed as dx^T = w dy^T, w rows read in place, dy^T
 *                  packed once (small) and each MR x NR block of dx^T stored
 *                  transposed (ukr_nn, depth O);
 *   dw = x^T dy:   x and dy read in place (ukr_tn, depth N).
 * Not BLIS: a small M (the batch) and, for dw, a short K are the shapes its
 * small/skinny path is weakest on (docs/performance.md has the figures).
 * matmul stays on the host's single-threaded row-major sgemm (BLIS).
 *
 * Each thread computes its own part of every output (column panels or row
 * blocks of y, row blocks of dx^T and dw), so no thread reduces another's
 * result and the output does not depend on timing. Sums over a batch that
 * shares one output (the gradient of a broadcast matmul operand) are done by
 * the thread owning the tile, batch after batch, in a fixed order.
 *
 *   fully_connected: x (N,K...) flattened to (N,K), w (K,O), b (O) -> y (N,O)
 *   matmul:          a (...,M,K), b (...,K,N) or (K,N) -> alpha * a b (...,M,N)
 */
#include <slim/op.h>

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "ops/conv_ukr.h"
#include "ops/fc.h"

extern const slim_op_desc slim__op_fully_connected;
extern const slim_op_desc slim__op_matmul;

/* ---- shared GEMM tiling --------------------------------------------------- */

/*
 * A batch of products C[i] = alpha * op(A[i]) op(B[i]) (+ beta C[i]) with
 * op(A) m x k and op(B) k x n. Strides between batch items: sa, sb, sc; sb == 0
 * broadcasts B, sc == 0 sums every item into one C.
 */
typedef struct gemm_args {
    int64_t batch, m, n, k;
    bool ta, tb;
    float alpha;
    const float *a;
    int64_t lda, sa;
    const float *b;
    int64_t ldb, sb;
    float *c;
    int64_t ldc, sc;
} gemm_args;

/* Column tiles are multiples of this, so a thread's columns stay vector-aligned. */
#define COL_BLOCK 16

/*
 * The part of a rows x n output that thread ith computes: rows [*r0,*r1) and
 * columns [*j0,*j1). Rows are split when there are enough of them (each thread
 * then runs one GEMM over the full N, the shape BLIS handles best), columns
 * otherwise (a batch of 1 through a classifier layer).
 */
static void tile_of(int64_t rows, int64_t n, int ith, int nth, int64_t *r0, int64_t *r1,
                    int64_t *j0, int64_t *j1)
{
    if (nth == 1 || rows >= 4 * (int64_t)nth || rows >= n) {
        slim_split(rows, ith, nth, r0, r1);
        *j0 = 0;
        *j1 = n;
        return;
    }
    int64_t blocks = (n + COL_BLOCK - 1) / COL_BLOCK, lo, hi;
    slim_split(blocks, ith, nth, &lo, &hi);
    *r0 = 0;
    *r1 = rows;
    *j0 = lo * COL_BLOCK < n ? lo * COL_BLOCK : n;
    *j1 = hi * COL_BLOCK < n ? hi * COL_BLOCK : n;
}

/* One sgemm call on rows [r0,r1) x columns [j0,j1) of batch item bi. */
static void gemm_tile(const slim_host *h, const gemm_args *g, int64_t bi, int64_t r0, int64_t r1,
                      int64_t j0, int64_t j1, float beta)
{
    if (r1 <= r0 || j1 <= j0)
        return;
    float *c = g->c + bi * g->sc + r0 * g->ldc + j0;
    if (g->k == 0) {
        /* An empty sum: the product is zero (sgemm need not handle k == 0). */
        if (beta == 0.0f)
            for (int64_t r = 0; r < r1 - r0; r++)
                memset(c + r * g->ldc, 0, (size_t)(j1 - j0) * sizeof(float));
        return;
    }
    /* Row r of op(A) is row r of A, or column r of A when transposed;
     * column j of op(B) is column j of B, or row j of B when transposed. */
    const float *a = g->a + bi * g->sa + (g->ta ? r0 : r0 * g->lda);
    const float *b = g->b + bi * g->sb + (g->tb ? j0 * g->ldb : j0);
    h->sgemm(g->ta, g->tb, r1 - r0, j1 - j0, g->k, g->alpha, a, g->lda, b, g->ldb, beta, c, g->ldc);
}

/* Thread ith's share of the batched product (beta 0: C is overwritten). */
static void gemm_parallel(const slim_kernel_ctx *ctx, const gemm_args *g)
{
    bool sum_batches = g->sc == 0 && g->batch > 1;
    int64_t rows = sum_batches ? g->m : g->batch * g->m;
    int64_t r0, r1, j0, j1;
    tile_of(rows, g->n, ctx->ith, ctx->nth, &r0, &r1, &j0, &j1);
    if (sum_batches) {
        /* The thread owns its tile of the single C and adds the items in batch order. */
        for (int64_t bi = 0; bi < g->batch; bi++)
            gemm_tile(ctx->host, g, bi, r0, r1, j0, j1, bi == 0 ? 0.0f : 1.0f);
        return;
    }
    /* Flattened rows (item, row) may span several batch items. */
    for (int64_t r = r0; r < r1;) {
        int64_t bi = r / g->m, lo = r % g->m;
        int64_t hi = lo + (r1 - r) < g->m ? lo + (r1 - r) : g->m;
        gemm_tile(ctx->host, g, bi, lo, hi, j0, j1, 0.0f);
        r += hi - lo;
    }
}

/* Plain triple loop over the same product, for the reference kernels. */
static void gemm_ref(const gemm_args *g)
{
    int64_t citems = g->sc == 0 ? 1 : g->batch;
    for (int64_t bi = 0; bi < citems; bi++)
        for (int64_t i = 0; i < g->m * g->n; i++)
            g->c[bi * g->sc + (i / g->n) * g->ldc + i % g->n] = 0.0f;
    for (int64_t bi = 0; bi < g->batch; bi++) {
        const float *a = g->a + bi * g->sa, *b = g->b + bi * g->sb;
        float *c = g->c + bi * g->sc;
        for (int64_t i = 0; i < g->m; i++)
            for (int64_t j = 0; j < g->n; j++) {
                double s = 0;
                for (int64_t p = 0; p < g->k; p++) {
                    float av = g->ta ? a[p * g->lda + i] : a[i * g->lda + p];
                    float bv = g->tb ? b[j * g->ldb + p] : b[p * g->ldb + j];
                    s += (double)av * bv;
                }
                c[i * g->ldc + j] += (float)(g->alpha * s);
            }
    }
}

static void zero_share(const slim_kernel_ctx *c, slim_tensor *t)
{
    if (!t->data)
        return;
    int64_t lo, hi;
    slim_split(slim_shape_numel(&t->shape), c->ith, c->nth, &lo, &hi);
    if (hi > lo)
        memset((float *)t->data + lo, 0, (size_t)(hi - lo) * sizeof(float));
}

static bool all_f32(const slim_infer_ctx *c)
{
    for (int i = 0; i < c->n_inputs; i++)
        if (c->inputs[i].dtype != SLIM_F32)
            return false;
    return true;
}

/* ---- fully_connected ------------------------------------------------------ */

typedef slim__fc_params fc_params; /* ops/fc.h: conv2d uses these kernels too */

/* Rows of w per packed block of the forward; columns of w packed at once (a
 * block of FC_KC x FC_COLS floats stays in L2, each panel's part in L1). */
#define FC_KC 256
#define FC_COLS 512
/* Floats of packed dy columns that the dw product walks the rows of x with. */
#define FC_DW_FLOATS 32768

static int64_t fc_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static int64_t fc_min(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

/* Floats of one thread's forward buffer: a block of w in NR-column panels. */
static size_t fc_fwd_floats(const fc_params *p)
{
    int64_t cols = fc_min(ceil_div(p->o, NR) * NR, FC_COLS);
    return round16((size_t)(fc_min(p->k, FC_KC) * cols));
}

/* The backward's shared buffer: dy^T in NR-column panels (O x NR each) for
 * dx, then dy in NR-column panels (N x NR each) for dw. */
static size_t fc_dyt_floats(const fc_params *p)
{
    return round16((size_t)(ceil_div(p->n, NR) * p->o * NR));
}

static size_t fc_bwd_floats(const fc_params *p)
{
    return fc_dyt_floats(p) + round16((size_t)(ceil_div(p->o, NR) * p->n * NR));
}

size_t slim__fc_workspace_bytes(const fc_params *p, int nth, bool training)
{
    size_t floats = fc_fwd_floats(p) * (size_t)(nth > 0 ? nth : 1);
    if (training && fc_bwd_floats(p) > floats)
        floats = fc_bwd_floats(p);
    return floats * sizeof(float);
}

static slim_status fc_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, ~0u, 0); /* backward: x and w, never y */
    fc_params *p = c->params;
    const slim_shape *xs = &c->inputs[0].shape, *ws = &c->inputs[1].shape;
    char b1[96], b2[96];
    if (!all_f32(c))
        return c->fail(c, SLIM_ETYPE, "fully_connected takes f32 inputs");
    if (xs->rank < 2)
        return c->fail(c, SLIM_ESHAPE, "x %s must have rank >= 2 (N, features...)",
                       slim_shape_str(xs, b1, sizeof b1));
    if (ws->rank != 2)
        return c->fail(c, SLIM_ESHAPE, "weights %s must be 2-D (K,O)",
                       slim_shape_str(ws, b1, sizeof b1));
    p->n = xs->dim[0];
    p->k = 1;
    for (int i = 1; i < xs->rank; i++)
        p->k *= xs->dim[i];
    p->o = ws->dim[1];
    if (ws->dim[0] != p->k)
        return c->fail(c, SLIM_ESHAPE,
                       "x %s has %lld features per example but the weights %s expect %lld",
                       slim_shape_str(xs, b1, sizeof b1), (long long)p->k,
                       slim_shape_str(ws, b2, sizeof b2), (long long)ws->dim[0]);
    p->has_bias = c->n_inputs > 2;
    if (p->has_bias) {
        const slim_shape *bs = &c->inputs[2].shape;
        if (bs->rank != 1 || bs->dim[0] != p->o)
            return c->fail(c, SLIM_ESHAPE, "bias %s must be (%lld,) to match the weights %s",
                           slim_shape_str(bs, b1, sizeof b1), (long long)p->o,
                           slim_shape_str(ws, b2, sizeof b2));
    }
    slim_shape ys = slim_shape_make(2, (int64_t[]){p->n, p->o});
    c->set_output(c, 0, SLIM_F32, &ys);
    c->set_workspace(c, slim__fc_workspace_bytes(p, c->nth, c->training));
    return SLIM_OK;
}

/* Rows [k0, k0+kc) of w (ld O), column panels [q0, q1), into buf: panel q at
 * buf + (q-q0)*kc*NR, row l of it at + l*NR, zero past column O. */
static void fc_pack_w(const float *w, int64_t o, int64_t k0, int64_t kc, int64_t q0, int64_t q1,
                      float *buf)
{
    for (int64_t l = 0; l < kc; l++) {
        const float *row = w + (k0 + l) * o;
        for (int64_t q = q0; q < q1; q++) {
            float *dst = buf + ((q - q0) * kc + l) * NR;
            int64_t nj = fc_min(NR, o - q * NR);
            copy_run(dst, row + q * NR, nj);
            if (nj < NR)
                zero_run(dst + nj, NR - nj);
        }
    }
}

/* y rows [i0, i1) x column panels [q0, q1) = x w + b. */
static void fc_forward_part(const fc_params *p, const float *x, const float *w, const float *b,
                            float *y, int64_t i0, int64_t i1, int64_t q0, int64_t q1, float *buf)
{
    const int64_t K = p->k, O = p->o;
    for (int64_t g0 = q0; g0 < q1; g0 += FC_COLS / NR) {
        int64_t g1 = fc_min(q1, g0 + FC_COLS / NR);
        /* K == 0 still makes one pass: y = b */
        for (int64_t k0 = 0; k0 == 0 || k0 < K; k0 += FC_KC) {
            int64_t kc = fc_min(FC_KC, K - k0);
            fc_pack_w(w, O, k0, kc, g0, g1, buf);
            for (int64_t q = g0; q < g1; q++) {
                int nr = (int)fc_min(NR, O - q * NR);
                for (int64_t r = i0; r < i1; r += MR) {
                    int mr = (int)fc_min(MR, i1 - r);
                    const float *a[MR];
                    for (int i = 0; i < MR; i++)
                        a[i] = x + (r + (i < mr ? i : 0)) * K + k0;
                    ukr_nn(kc, a, buf + (q - g0) * kc * NR, y + r * O + q * NR, O, mr, nr,
                           b && k0 == 0 ? b + q * NR : NULL, k0 > 0);
                }
            }
            if (kc <= 0)
                break;
        }
    }
}

static void fc_forward_ref(const slim_kernel_ctx *c)
{
    const fc_params *p = c->params;
    const float *x = c->in[0].data, *w = c->in[1].data;
    const float *b = p->has_bias ? c->in[2].data : NULL;
    float *y = c->out[0].data;
    for (int64_t i = 0; i < p->n; i++)
        for (int64_t j = 0; j < p->o; j++) {
            double s = b ? b[j] : 0.0;
            for (int64_t q = 0; q < p->k; q++)
                s += (double)x[i * p->k + q] * w[q * p->o + j];
            y[i * p->o + j] = (float)s;
        }
}

void slim__fc_forward(const slim_kernel_ctx *c)
{
    const fc_params *p = c->params;
    const float *x = c->in[0].data; /* x: (N,K) */
    const float *w = c->in[1].data; /* w: (K,O) */
    const float *b = p->has_bias ? c->in[2].data : NULL;
    float *y = c->out[0].data; /* y: (N,O) */
    size_t per = fc_fwd_floats(p);
    int nw = (int)fc_min(c->nth, (int64_t)(c->ws_size / sizeof(float) / per));
    if (nw == 0) { /* no workspace for even one thread: plain loops */
        if (c->ith == 0)
            fc_forward_ref(c);
        return;
    }
    if (c->ith >= nw)
        return;
    /* column panels per thread when there are enough of them, else row blocks */
    int64_t panels = ceil_div(p->o, NR), blocks = ceil_div(p->n, MR), lo, hi;
    float *buf = (float *)c->ws + (size_t)c->ith * per;
    if (panels >= nw || blocks < 2 * panels) {
        slim_split(panels, c->ith, nw, &lo, &hi);
        if (hi > lo)
            fc_forward_part(p, x, w, b, y, 0, p->n, lo, hi, buf);
    } else {
        slim_split(blocks, c->ith, nw, &lo, &hi);
        if (hi > lo)
            fc_forward_part(p, x, w, b, y, lo * MR, fc_min(p->n, hi * MR), 0, panels, buf);
    }
}

/* dy^T (O x N) into NR-column panels, panel j at dyt + j*O*NR (zero past
 * column N): this thread's rows [o0, o1) of every panel. */
static void fc_pack_dyt(const fc_params *p, const float *dy, int64_t o0, int64_t o1, float *dyt)
{
    const int64_t O = p->o;
    for (int64_t j = 0; j < ceil_div(p->n, NR); j++) {
        float *dst = dyt + j * O * NR;
        for (int64_t jj = 0; jj < NR; jj++) {
            int64_t n = j * NR + jj;
            if (n >= p->n) {
                for (int64_t o = o0; o < o1; o++)
                    dst[o * NR + jj] = 0.0f;
                continue;
            }
            const float *src = dy + n * O;
            for (int64_t o = o0; o < o1; o++)
                dst[o * NR + jj] = src[o];
        }
    }
}

/* dy's column panels [q0, q1) into dyp: panel q (N x NR, zero past column O) at dyp + q*N*NR. */
static void fc_pack_dy(const fc_params *p, const float *dy, int64_t q0, int64_t q1, float *dyp)
{
    for (int64_t q = q0; q < q1; q++) {
        int64_t nj = fc_min(NR, p->o - q * NR);
        for (int64_t n = 0; n < p->n; n++) {
            float *dst = dyp + (q * p->n + n) * NR;
            copy_run(dst, dy + n * p->o + q * NR, nj);
            if (nj < NR)
                zero_run(dst + nj, NR - nj);
        }
    }
}

/* dx columns [k0, k0+mr) (dx: N x K) = rows [k0, k0+mr) of w dy^T, block by
 * block of NR examples: the MR x NR block is computed in registers and
 * stored transposed. */
static void fc_dx_rows(const fc_params *p, const float *w, const float *dyt, float *dx, int64_t k0,
                       int mr)
{
    const int64_t K = p->k, O = p->o;
    const float *a[MR];
    for (int i = 0; i < MR; i++)
        a[i] = w + (k0 + (i < mr ? i : 0)) * O;
    for (int64_t j = 0; j < ceil_div(p->n, NR); j++) {
        float t[MR * NR];
        int nr = (int)fc_min(NR, p->n - j * NR);
        ukr_nn(O, a, dyt + j * O * NR, t, NR, mr, nr, NULL, false);
        for (int jj = 0; jj < nr; jj++) {
            float *d = dx + (j * NR + jj) * K + k0;
            for (int i = 0; i < mr; i++)
                d[i] = t[i * NR + jj];
        }
    }
}

/* Plain loops over the three products, for the reference kernels. */
static void fc_backward_ref(const slim_kernel_ctx *c)
{
    const fc_params *p = c->params;
    const float *x = c->in[0].data, *w = c->in[1].data, *dy = c->dout[0].data;
    float *dx = c->din[0].data, *dw = c->din[1].data;
    float *db = p->has_bias ? c->din[2].data : NULL;
    const int64_t N = p->n, K = p->k, O = p->o;
    for (int64_t i = 0; dx && i < N; i++)
        for (int64_t k = 0; k < K; k++) {
            double s = 0;
            for (int64_t o = 0; dy && o < O; o++)
                s += (double)dy[i * O + o] * w[k * O + o];
            dx[i * K + k] = (float)s;
        }
    for (int64_t k = 0; dw && k < K; k++)
        for (int64_t o = 0; o < O; o++) {
            double s = 0;
            for (int64_t i = 0; dy && i < N; i++)
                s += (double)x[i * K + k] * dy[i * O + o];
            dw[k * O + o] = (float)s;
        }
    for (int64_t o = 0; db && o < O; o++) {
        double s = 0;
        for (int64_t i = 0; dy && i < N; i++)
            s += dy[i * O + o];
        db[o] = (float)s;
    }
}

void slim__fc_backward(const slim_kernel_ctx *c)
{
    const fc_params *p = c->params;
    const float *x = c->in[0].data;    /* x: (N,K) */
    const float *w = c->in[1].data;    /* w: (K,O) */
    const float *dy = c->dout[0].data; /* dy: (N,O) */
    slim_tensor *dx = &c->din[0], *dw = &c->din[1];
    slim_tensor *db = p->has_bias ? &c->din[2] : NULL;
    const int64_t N = p->n, K = p->k, O = p->o;
    if (!dy) {
        zero_share(c, dx);
        zero_share(c, dw);
        if (db)
            zero_share(c, db);
        return;
    }
    if ((dx->data || dw->data) && c->ws_size < fc_bwd_floats(p) * sizeof(float)) {
        if (c->ith == 0) /* no workspace for the packed dy: plain loops */
            fc_backward_ref(c);
        return;
    }
    /* dy packed twice, by all threads, for the two products */
    float *dyt = c->ws, *dyp = dyt + fc_dyt_floats(p);
    const int64_t panels = ceil_div(O, NR);
    int64_t lo, hi;
    if (dx->data) {
        slim_split(O, c->ith, c->nth, &lo, &hi);
        fc_pack_dyt(p, dy, lo, hi, dyt);
    }
    if (dw->data) {
        slim_split(panels, c->ith, c->nth, &lo, &hi);
        fc_pack_dy(p, dy, lo, hi, dyp);
    }
    if (dx->data || dw->data)
        c->sync(c);
    /* Every thread owns the same MR-row blocks of dx^T and dw (column blocks of dx). */
    slim_split(ceil_div(K, MR), c->ith, c->nth, &lo, &hi);
    for (int64_t kb = lo; dx->data && kb < hi; kb++)
        fc_dx_rows(p, w, dyt, dx->data, kb * MR, (int)fc_min(MR, K - kb * MR));
    if (dw->data) {
        /* dw = x^T dy: MR rows of dw by NR columns, over the N examples; dy
         * panels in groups of about FC_DW_FLOATS floats, reused by every row block */
        float *dwv = dw->data;
        int64_t group = fc_max(1, FC_DW_FLOATS / fc_max(1, p->n * NR));
        for (int64_t q0 = 0; q0 < panels; q0 += group)
            for (int64_t kb = lo; kb < hi; kb++) {
                int64_t k0 = kb * MR;
                int mr = (int)fc_min(MR, K - k0);
                for (int64_t q = q0; q < fc_min(panels, q0 + group); q++)
                    ukr_tn(N, x + k0, K, dyp + q * N * NR, NR, dwv + k0 * O + q * NR, O, mr,
                           (int)fc_min(NR, O - q * NR), false);
            }
    }
    if (db && db->data) { /* db = column sums of dy, each thread owning a range of columns */
        float *dbv = db->data;
        slim_split(O, c->ith, c->nth, &lo, &hi);
        if (hi > lo) {
            memset(dbv + lo, 0, (size_t)(hi - lo) * sizeof(float));
            for (int64_t i = 0; i < N; i++)
                for (int64_t j = lo; j < hi; j++)
                    dbv[j] += dy[i * O + j];
        }
    }
}

const slim_op_desc slim__op_fully_connected = {
    .struct_size = sizeof(slim_op_desc),
    .name = "fully_connected",
    .doc = "y = x w + b: x (N,K) (higher ranks flattened to (N, prod rest)), w (K,O), "
           "optional b (O) -> (N,O)",
    .min_inputs = 2,
    .max_inputs = 3,
    .n_outputs = 1,
    .params_size = sizeof(fc_params),
    .infer = fc_infer,
    .forward = slim__fc_forward,
    .backward = slim__fc_backward,
    .forward_ref = fc_forward_ref,
    .backward_ref = fc_backward_ref,
};

/* ---- matmul --------------------------------------------------------------- */

typedef struct matmul_params {
    int64_t batch, m, n, k;
    bool ta, tb;
    bool b_shared; /* b is 2-D and used by every batch item */
    float alpha;
} matmul_params;

static const slim_attr_spec matmul_attrs[] = {
    {.name = "transpose_a", .type = SLIM_ATTR_BOOL, .def = "false", .doc = "a is stored (...,K,M)"},
    {.name = "transpose_b", .type = SLIM_ATTR_BOOL, .def = "false", .doc = "b is stored (...,N,K)"},
    {.name = "alpha", .type = SLIM_ATTR_FLOAT, .def = "1", .doc = "scale of the product"},
};

static slim_status matmul_infer(slim_infer_ctx *c)
{
    c->set_backward_reads(c, ~0u, 0); /* backward: x and w, never y */
    matmul_params *p = c->params;
    const slim_shape *as = &c->inputs[0].shape, *bs = &c->inputs[1].shape;
    char b1[96], b2[96];
    if (!all_f32(c))
        return c->fail(c, SLIM_ETYPE, "matmul takes f32 inputs");
    if (as->rank < 2 || bs->rank < 2)
        return c->fail(c, SLIM_ESHAPE, "a %s and b %s must both have rank >= 2",
                       slim_shape_str(as, b1, sizeof b1), slim_shape_str(bs, b2, sizeof b2));
    p->ta = c->attr_bool(c, "transpose_a");
    p->tb = c->attr_bool(c, "transpose_b");
    p->alpha = (float)c->attr_float(c, "alpha");
    int ra = as->rank, rb = bs->rank;
    p->m = p->ta ? as->dim[ra - 1] : as->dim[ra - 2];
    p->k = p->ta ? as->dim[ra - 2] : as->dim[ra - 1];
    int64_t kb = p->tb ? bs->dim[rb - 1] : bs->dim[rb - 2];
    p->n = p->tb ? bs->dim[rb - 2] : bs->dim[rb - 1];
    if (kb != p->k)
        return c->fail(c, SLIM_ESHAPE,
                       "inner dimensions differ: a %s gives K=%lld, b %s gives K=%lld "
                       "(transpose_a=%d, transpose_b=%d)",
                       slim_shape_str(as, b1, sizeof b1), (long long)p->k,
                       slim_shape_str(bs, b2, sizeof b2), (long long)kb, p->ta, p->tb);
    p->b_shared = rb == 2;
    if (rb > 2) {
        bool same = rb == ra;
        for (int i = 0; same && i < ra - 2; i++)
            same = as->dim[i] == bs->dim[i];
        if (!same)
            return c->fail(c, SLIM_ESHAPE,
                           "batch dimensions of a %s and b %s must be equal (or b 2-D)",
                           slim_shape_str(as, b1, sizeof b1), slim_shape_str(bs, b2, sizeof b2));
    }
    p->batch = 1;
    for (int i = 0; i < ra - 2; i++)
        p->batch *= as->dim[i];
    slim_shape ys = *as;
    ys.dim[ra - 2] = p->m;
    ys.dim[ra - 1] = p->n;
    c->set_output(c, 0, SLIM_F32, &ys);
    return SLIM_OK;
}

/*
 * The product as one gemm_args. A shared b with an untransposed a folds the
 * batch into M: (batch*M, K) x op(B) is one larger, faster GEMM.
 */
static gemm_args matmul_gemm(const matmul_params *p, bool fold, const float *a, const float *b,
                             float *y)
{
    gemm_args g = {.batch = p->batch,
                   .m = p->m,
                   .n = p->n,
                   .k = p->k,
                   .ta = p->ta,
                   .tb = p->tb,
                   .alpha = p->alpha,
                   .a = a,
                   .lda = p->ta ? p->m : p->k,
                   .sa = p->m * p->k,
                   .b = b,
                   .ldb = p->tb ? p->k : p->n,
                   .sb = p->b_shared ? 0 : p->k * p->n,
                   .c = y,
                   .ldc = p->n,
                   .sc = p->m * p->n};
    if (fold && p->b_shared && !p->ta) {
        g.m *= g.batch;
        g.batch = 1;
    }
    return g;
}

static void matmul_forward(const slim_kernel_ctx *c)
{
    gemm_args g = matmul_gemm(c->params, true, c->in[0].data, c->in[1].data, c->out[0].data);
    gemm_parallel(c, &g);
}

static void matmul_forward_ref(const slim_kernel_ctx *c)
{
    gemm_args g = matmul_gemm(c->params, false, c->in[0].data, c->in[1].data, c->out[0].data);
    gemm_ref(&g);
}

/*
 * With Y = alpha op(A) op(B) and G = dY:
 *   d op(A) = alpha G op(B)^T  (M x K),   d op(B) = alpha op(A)^T G  (K x N).
 * Transposed operands take the transpose of those: dA = alpha op(B) G^T (K x M),
 * dB = alpha G^T op(A) (N x K). Every form is one more sgemm with flags.
 */
static void matmul_grads(const matmul_params *p, bool fold, const float *a, const float *b,
                         const float *dy, float *da, float *db, gemm_args *ga, gemm_args *gb)
{
    int64_t lda = p->ta ? p->m : p->k, ldb = p->tb ? p->k : p->n;
    int64_t sa = p->m * p->k, sb = p->b_shared ? 0 : p->k * p->n, sy = p->m * p->n;
    if (!p->ta) /* dA (M,K) = alpha G (M,N) op(B)^T (N,K) */
        *ga = (gemm_args){.batch = p->batch,
                          .m = p->m,
                          .n = p->k,
                          .k = p->n,
                          .ta = false,
                          .tb = !p->tb,
                          .alpha = p->alpha,
                          .a = dy,
                          .lda = p->n,
                          .sa = sy,
                          .b = b,
                          .ldb = ldb,
                          .sb = sb,
                          .c = da,
                          .ldc = p->k,
                          .sc = sa};
    else /* dA (K,M) = alpha op(B) (K,N) G^T (N,M) */
        *ga = (gemm_args){.batch = p->batch,
                          .m = p->k,
                          .n = p->m,
                          .k = p->n,
                          .ta = p->tb,
                          .tb = true,
                          .alpha = p->alpha,
                          .a = b,
                          .lda = ldb,
                          .sa = sb,
                          .b = dy,
                          .ldb = p->n,
                          .sb = sy,
                          .c = da,
                          .ldc = p->m,
                          .sc = sa};
    /* A shared b gets the sum over the batch: sc = 0. */
    if (!p->tb) /* dB (K,N) = alpha op(A)^T (K,M) G (M,N) */
        *gb = (gemm_args){.batch = p->batch,
                          .m = p->k,
                          .n = p->n,
                          .k = p->m,
                          .ta = !p->ta,
                          .tb = false,
                          .alpha = p->alpha,
                          .a = a,
                          .lda = lda,
                          .sa = sa,
                          .b = dy,
                          .ldb = p->n,
                          .sb = sy,
                          .c = db,
                          .ldc = p->n,
                          .sc = sb};
    else /* dB (N,K) = alpha G^T (N,M) op(A) (M,K) */
        *gb = (gemm_args){.batch = p->batch,
                          .m = p->n,
                          .n = p->k,
                          .k = p->m,
                          .ta = true,
                          .tb = p->ta,
                          .alpha = p->alpha,
                          .a = dy,
                          .lda = p->n,
                          .sa = sy,
                          .b = a,
                          .ldb = lda,
                          .sb = sa,
                          .c = db,
                          .ldc = p->k,
                          .sc = sb};
    if (fold && p->b_shared && !p->ta) {
        /* A and G are both (batch*M, .) row-major: dA is one GEMM over all their rows,
         * and dB's sum over the batch becomes the GEMM's own sum over those rows. */
        ga->m *= ga->batch;
        gb->k *= gb->batch;
        ga->batch = gb->batch = 1;
    }
}

static void matmul_backward(const slim_kernel_ctx *c)
{
    const matmul_params *p = c->params;
    slim_tensor *da = &c->din[0], *db = &c->din[1];
    if (!c->dout[0].data) {
        zero_share(c, da);
        zero_share(c, db);
        return;
    }
    gemm_args ga, gb;
    matmul_grads(p, true, c->in[0].data, c->in[1].data, c->dout[0].data, da->data, db->data, &ga,
                 &gb);
    if (da->data)
        gemm_parallel(c, &ga);
    if (db->data)
        gemm_parallel(c, &gb);
}

static void matmul_backward_ref(const slim_kernel_ctx *c)
{
    const matmul_params *p = c->params;
    slim_tensor *da = &c->din[0], *db = &c->din[1];
    if (!c->dout[0].data) {
        zero_share(c, da);
        zero_share(c, db);
        return;
    }
    gemm_args ga, gb;
    matmul_grads(p, false, c->in[0].data, c->in[1].data, c->dout[0].data, da->data, db->data, &ga,
                 &gb);
    if (da->data)
        gemm_ref(&ga);
    if (db->data)
        gemm_ref(&gb);
}

const slim_op_desc slim__op_matmul = {
    .struct_size = sizeof(slim_op_desc),
    .name = "matmul",
    .doc = "alpha * op(a) op(b): a (...,M,K), b (...,K,N) with equal batch dims or b 2-D "
           "(shared); transpose_a / transpose_b read a as (...,K,M), b as (...,N,K)",
    .min_inputs = 2,
    .max_inputs = 2,
    .n_outputs = 1,
    .attrs = matmul_attrs,
    .n_attrs = (int)(sizeof matmul_attrs / sizeof matmul_attrs[0]),
    .params_size = sizeof(matmul_params),
    .infer = matmul_infer,
    .forward = matmul_forward,
    .backward = matmul_backward,
    .forward_ref = matmul_forward_ref,
    .backward_ref = matmul_backward_ref,
};
