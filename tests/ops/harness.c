/* tests/ops/harness.c - the generic op harness (see harness.h). */
#include "harness.h"
#include "runtime/oprun.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_checks, n_failed;

/* ---- the families (registered before main) ------------------------------------- */

#define MAX_FAMILIES 64
static const harness_family *families[MAX_FAMILIES];
static int n_families;

void harness_family_add(const harness_family *f)
{
    if (n_families == MAX_FAMILIES) { /* before main: no TAP yet */
        fprintf(stderr, "harness: more than %d families; raise MAX_FAMILIES\n", MAX_FAMILIES);
        abort();
    }
    families[n_families++] = f;
}

const harness_family *const *harness_families(int *n)
{
    *n = n_families;
    return families;
}

/* ---- TAP ------------------------------------------------------------------------- */

void harness_ok(bool ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++n_checks);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok)
        n_failed++;
    fflush(stdout);
}

void harness_diag(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("# ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
}

int harness_infer_fails(const slim_registry *reg, const char *op, const char *label,
                        const char *attrs, bool training, const slim_tensor_desc *in, int n_in,
                        const char *want)
{
    slim_attrs *a = slim_attrs_new();
    slim__oprun *r = NULL;
    slim_error err = {0};
    slim_status st = slim_attrs_set_list(a, attrs);
    if (st == SLIM_OK)
        st = slim__oprun_new(reg, op, a, in, n_in, training, 1, &r, &err);
    else
        snprintf(err.msg, sizeof err.msg, "the attribute text '%s' does not parse", attrs);
    slim__oprun_free(r);
    slim_attrs_free(a);
    bool ok = st != SLIM_OK && strstr(err.msg, want) != NULL;
    harness_ok(ok, "%s/%s: infer fails with \"%s\"", op, label, want);
    if (!ok)
        harness_diag("status %d, message '%s'", st, st ? err.msg : "(accepted)");
    return ok ? 0 : 1;
}

int harness_failures(void)
{
    return n_failed;
}

int harness_count(void)
{
    return n_checks;
}

/* xorshift for test data: fixed seed per case, independent of the engine's RNG */
static uint64_t rng_state;
static double rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (double)(rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h | 1;
}

typedef struct buf {
    slim_tensor_desc d;
    int64_t n;
    size_t bytes;
    void *data;
} buf;

static double get(const buf *b, int64_t i)
{
    switch (b->d.dtype) {
    case SLIM_F32: return ((float *)b->data)[i];
    case SLIM_U8: return ((uint8_t *)b->data)[i];
    case SLIM_I32: return ((int32_t *)b->data)[i];
    case SLIM_I64: return (double)((int64_t *)b->data)[i];
    }
    return 0;
}

static void fill_input(const harness_input *hi, buf *b)
{
    b->d.dtype = hi->dtype ? hi->dtype : SLIM_F32;
    b->d.shape = slim_shape_make(hi->rank, hi->dim);
    b->n = slim_shape_numel(&b->d.shape);
    b->bytes = (size_t)b->n * slim_dtype_size(b->d.dtype);
    b->data = calloc(1, b->bytes + 256);
    double lo = hi->lo, hi_ = hi->hi;
    if (lo == 0 && hi_ == 0)
        lo = -1, hi_ = 1;
    for (int64_t i = 0; i < b->n; i++) {
        double v = lo + (hi_ - lo) * rnd();
        switch (b->d.dtype) {
        case SLIM_F32: ((float *)b->data)[i] = hi->values ? hi->values[i] : (float)v; break;
        case SLIM_U8:
            ((uint8_t *)b->data)[i] = (uint8_t)(hi->ivalues ? hi->ivalues[i] : floor(v));
            break;
        case SLIM_I32:
            ((int32_t *)b->data)[i] = (int32_t)(hi->ivalues ? hi->ivalues[i] : floor(v));
            break;
        case SLIM_I64:
            ((int64_t *)b->data)[i] = hi->ivalues ? hi->ivalues[i] : (int64_t)floor(v);
            break;
        }
    }
}

static void copy_bufs(buf *dst, const buf *src, int n)
{
    for (int i = 0; i < n; i++)
        memcpy(dst[i].data, src[i].data, src[i].bytes);
}

/* Max relative error |a - b| / (1 + |b|); NaN anywhere is an infinite error. */
static double max_err(const slim_tensor *a, const buf *ref, int64_t *where)
{
    buf ab = {.d = {a->dtype, a->shape}, .n = slim_shape_numel(&a->shape), .data = a->data};
    double worst = 0;
    *where = -1;
    for (int64_t i = 0; i < ref->n; i++) {
        double x = get(&ab, i), y = get(ref, i);
        double e = (isnan(x) != isnan(y)) ? INFINITY : (isnan(x) ? 0 : fabs(x - y) / (1 + fabs(y)));
        if (e > worst || (isinf(e) && *where < 0)) {
            worst = e;
            *where = i;
        }
    }
    return worst;
}

static double loss_of(slim__oprun *r, const double *const *rw)
{
    const slim__infer_result *inf = slim__oprun_infer(r);
    double L = 0;
    for (int j = 0; j < inf->n_out; j++) {
        if (!rw[j])
            continue;
        slim_tensor t = slim__oprun_output(r, j);
        const float *y = t.data;
        int64_t n = slim_shape_numel(&t.shape);
        for (int64_t i = 0; i < n; i++)
            L += (double)y[i] * rw[j][i];
    }
    return L;
}

int harness_run(const slim_registry *reg, const harness_case *c)
{
    int failed_before = n_failed;
    char label[256];
    snprintf(label, sizeof label, "%s/%s", c->op, c->name);
    rng_state = hash_str(label);
    double fwd_tol = c->fwd_tol > 0 ? c->fwd_tol : 1e-4;
    double grad_tol = c->grad_tol > 0 ? c->grad_tol : 2e-2;
    double eps = c->eps > 0 ? c->eps : 1e-3;

    buf in[HARNESS_MAX_IN], in0[HARNESS_MAX_IN];
    memset(in, 0, sizeof in);
    memset(in0, 0, sizeof in0);
    slim_tensor_desc descs[HARNESS_MAX_IN];
    for (int i = 0; i < c->n_in; i++) {
        fill_input(&c->in[i], &in[i]);
        in0[i] = in[i];
        in0[i].data = malloc(in[i].bytes + 256);
        memcpy(in0[i].data, in[i].data, in[i].bytes);
        descs[i] = in[i].d;
    }
    void *ptrs[HARNESS_MAX_IN];
    for (int i = 0; i < c->n_in; i++)
        ptrs[i] = in[i].data;

    slim_attrs *a = slim_attrs_new();
    slim__oprun *r1 = NULL, *r3 = NULL;
    slim_error err = {0};
    slim_status st = slim_attrs_set_list(a, c->attrs);
    if (st != SLIM_OK) {
        harness_ok(false, "%s: attribute text '%s' does not parse", label, c->attrs);
        goto out;
    }
    st = slim__oprun_new(reg, c->op, a, descs, c->n_in, c->training, 1, &r1, &err);
    if (st == SLIM_OK)
        st = slim__oprun_new(reg, c->op, a, descs, c->n_in, c->training, 3, &r3, &err);
    harness_ok(st == SLIM_OK, "%s: infer%s%s", label, st ? ": " : "", st ? err.msg : "");
    if (st != SLIM_OK)
        goto out;
    const slim__infer_result *inf = slim__oprun_infer(r1);
    const slim_op_desc *d = slim__oprun_desc(r1);

    /* reference forward, kept */
    buf ref[SLIM__MAX_OUTPUTS];
    for (int j = 0; j < inf->n_out; j++) {
        ref[j].d = inf->out[j];
        ref[j].n = slim_shape_numel(&inf->out[j].shape);
        ref[j].bytes = (size_t)ref[j].n * slim_dtype_size(inf->out[j].dtype);
        ref[j].data = malloc(ref[j].bytes + 256);
    }
    const uint64_t seed = 1234;
    const int64_t step = 3;
    slim__oprun_forward(r1, ptrs, true, seed, step, 0.1f);
    for (int j = 0; j < inf->n_out; j++)
        memcpy(ref[j].data, slim__oprun_output(r1, j).data, ref[j].bytes);

    struct {
        slim__oprun *r;
        int nth;
    } runs[2] = {{r1, 1}, {r3, 3}};
    static const char *const kernel_names[3] = {"1 thread", "3 threads", "reference"};
    for (int k = 0; k < 2; k++) {
        copy_bufs(in, in0, c->n_in);
        slim__oprun_forward(runs[k].r, ptrs, false, seed, step, 0.1f);
        double worst = 0;
        int64_t where = -1;
        int wj = 0;
        for (int j = 0; j < inf->n_out; j++) {
            slim_tensor t = slim__oprun_output(runs[k].r, j);
            int64_t w;
            double e = max_err(&t, &ref[j], &w);
            if (e > worst || (w >= 0 && where < 0 && e >= worst)) {
                worst = e;
                where = w;
                wj = j;
            }
        }
        bool ok = worst <= fwd_tol;
        harness_ok(ok, "%s: forward %d thread%s vs reference (max rel err %.2g)", label,
                   runs[k].nth, runs[k].nth > 1 ? "s" : "", worst);
        if (!ok && where >= 0) {
            slim_tensor t = slim__oprun_output(runs[k].r, wj);
            buf tb = {.d = {t.dtype, t.shape}, .data = t.data};
            harness_diag("output %d element %lld: got %.8g, reference %.8g", wj, (long long)where,
                         get(&tb, where), get(&ref[wj], where));
        }
    }
    /* the same thread count twice gives bit-identical outputs */
    {
        copy_bufs(in, in0, c->n_in);
        slim__oprun_forward(r3, ptrs, false, seed, step, 0.1f);
        buf first[SLIM__MAX_OUTPUTS];
        for (int j = 0; j < inf->n_out; j++) {
            first[j] = ref[j];
            first[j].data = malloc(ref[j].bytes + 256);
            memcpy(first[j].data, slim__oprun_output(r3, j).data, ref[j].bytes);
        }
        copy_bufs(in, in0, c->n_in);
        slim__oprun_forward(r3, ptrs, false, seed, step, 0.1f);
        bool same = true;
        for (int j = 0; j < inf->n_out; j++) {
            same = same && memcmp(first[j].data, slim__oprun_output(r3, j).data, ref[j].bytes) == 0;
            free(first[j].data);
        }
        harness_ok(same, "%s: forward 3 threads twice is bit-identical", label);
    }
    /* an output the op may write over an input (set_in_place): the same bits
     * with the two one buffer, as the planner lays them out */
    for (int j = 0; j < inf->n_out; j++)
        for (int i = 0; i < c->n_in; i++) {
            if (!((inf->in_place[j] >> i) & 1u))
                continue;
            if (in[i].bytes != ref[j].bytes) {
                harness_ok(false, "%s: output %d over input %d: %zu bytes against %zu", label, j, i,
                           ref[j].bytes, in[i].bytes);
                continue;
            }
            for (int k = 0; k < 3; k++) {
                if (k == 2 && !d->forward_ref)
                    continue;
                slim__oprun *rk = k == 2 ? r1 : runs[k].r;
                copy_bufs(in, in0, c->n_in);
                slim__oprun_forward(rk, ptrs, k == 2, seed, step, 0.1f);
                slim_tensor t = slim__oprun_output(rk, j);
                void *apart = malloc(ref[j].bytes + 256);
                memcpy(apart, t.data, ref[j].bytes);
                memcpy(t.data, in0[i].data, in[i].bytes);
                ptrs[i] = t.data;
                slim__oprun_forward(rk, ptrs, k == 2, seed, step, 0.1f);
                ptrs[i] = in[i].data;
                harness_ok(memcmp(apart, t.data, ref[j].bytes) == 0,
                           "%s: forward %s with output %d over input %d is bit-identical", label,
                           kernel_names[k], j, i);
                free(apart);
            }
        }
    if (c->expect) {
        int64_t where;
        slim_tensor t = slim__oprun_output(r1, 0);
        buf eb = {.d = inf->out[0], .n = ref[0].n, .data = (void *)c->expect};
        double e = max_err(&t, &eb, &where);
        /* expect holds f32 values; compare against output 0 whatever its dtype */
        if (inf->out[0].dtype != SLIM_F32) {
            e = 0;
            buf ob = {.d = inf->out[0], .n = ref[0].n, .data = t.data};
            for (int64_t i = 0; i < ref[0].n; i++) {
                double x = fabs(get(&ob, i) - c->expect[i]);
                if (x > e)
                    e = x, where = i;
            }
        }
        harness_ok(e <= fwd_tol, "%s: known values (max rel err %.2g)", label, e);
        if (e > fwd_tol && where >= 0) {
            buf ob = {.d = inf->out[0], .data = t.data};
            harness_diag("element %lld: got %.8g, expected %.8g", (long long)where, get(&ob, where),
                         (double)c->expect[where]);
        }
    }

    if (!c->no_grad && d->backward) {
        /* L = sum_j sum_i y_j[i] * r_j[i] over f32 outputs */
        double *rw[SLIM__MAX_OUTPUTS] = {0};
        float *rwf[SLIM__MAX_OUTPUTS] = {0};
        for (int j = 0; j < inf->n_out; j++) {
            if (inf->out[j].dtype != SLIM_F32)
                continue;
            rw[j] = malloc((size_t)ref[j].n * sizeof(double) + 256);
            rwf[j] = malloc((size_t)ref[j].n * sizeof(float) + 256);
            for (int64_t i = 0; i < ref[j].n; i++) {
                rwf[j][i] = (float)(rnd() * 2 - 1);
                rw[j][i] = rwf[j][i];
            }
        }
        float *din[HARNESS_MAX_IN] = {0}, *din_ref[HARNESS_MAX_IN] = {0};
        for (int i = 0; i < c->n_in; i++) {
            bool want = in[i].d.dtype == SLIM_F32 && !(d->nondiff_inputs & (1u << i)) &&
                        !(c->skip_grad_inputs & (1u << i));
            if (want) {
                din[i] = calloc((size_t)in[i].n + 64, sizeof(float));
                din_ref[i] = calloc((size_t)in[i].n + 64, sizeof(float));
            }
        }
        copy_bufs(in, in0, c->n_in);
        slim__oprun_forward(r3, ptrs, false, seed, step, 0.1f);
        slim__oprun_backward(r3, ptrs, (const float *const *)rwf, din, false, seed, step);
        if (d->backward_ref) {
            copy_bufs(in, in0, c->n_in);
            slim__oprun_forward(r1, ptrs, true, seed, step, 0.1f);
            slim__oprun_backward(r1, ptrs, (const float *const *)rwf, din_ref, true, seed, step);
            /* the fast kernels on 3 threads (din, also checked against finite
             * differences below), then on 1 (some paths differ: no partial
             * sums, other splits) */
            float *din1[HARNESS_MAX_IN] = {0};
            for (int i = 0; i < c->n_in; i++)
                if (din[i])
                    din1[i] = calloc((size_t)in[i].n + 64, sizeof(float));
            copy_bufs(in, in0, c->n_in);
            slim__oprun_forward(r1, ptrs, false, seed, step, 0.1f);
            slim__oprun_backward(r1, ptrs, (const float *const *)rwf, din1, false, seed, step);
            for (int k = 0; k < 2; k++) {
                float *const *got = k == 0 ? din : din1;
                double worst = 0;
                for (int i = 0; i < c->n_in; i++)
                    for (int64_t e = 0; got[i] && e < in[i].n; e++) {
                        double x = fabs(got[i][e] - din_ref[i][e]) / (1 + fabs(din_ref[i][e]));
                        if (!(x <= worst))
                            worst = isnan(x) ? INFINITY : x;
                    }
                harness_ok(worst <= fwd_tol * 10,
                           "%s: backward %d thread%s vs reference (max rel err %.2g)", label,
                           k == 0 ? 3 : 1, k == 0 ? "s" : "", worst);
            }
            for (int i = 0; i < c->n_in; i++)
                free(din1[i]);
        }
        /* an input gradient the op may write over an output gradient
         * (set_backward_in_place): every gradient the same bits with the two
         * one buffer */
        for (int i = 0; i < c->n_in; i++)
            for (int j = 0; j < inf->n_out; j++) {
                if (!din[i] || !rwf[j] || !((inf->bwd_in_place[i] >> j) & 1u))
                    continue;
                if ((size_t)in[i].n != (size_t)ref[j].n) {
                    harness_ok(false,
                               "%s: gradient of input %d over output %d's: %lld against %lld",
                               label, i, j, (long long)in[i].n, (long long)ref[j].n);
                    continue;
                }
                for (int k = 0; k < 3; k++) {
                    if (k == 2 && !d->backward_ref)
                        continue;
                    slim__oprun *rk = k == 2 ? r1 : runs[k].r;
                    float *apart[HARNESS_MAX_IN] = {0}, *over[HARNESS_MAX_IN] = {0};
                    const float *dout[SLIM__MAX_OUTPUTS];
                    for (int m = 0; m < c->n_in; m++)
                        if (din[m]) {
                            apart[m] = calloc((size_t)in[m].n + 64, sizeof(float));
                            over[m] = m == i ? NULL : calloc((size_t)in[m].n + 64, sizeof(float));
                        }
                    float *shared = malloc((size_t)ref[j].n * sizeof(float) + 256);
                    memcpy(shared, rwf[j], (size_t)ref[j].n * sizeof(float));
                    over[i] = shared;
                    for (int m = 0; m < inf->n_out; m++)
                        dout[m] = m == j ? shared : rwf[m];
                    copy_bufs(in, in0, c->n_in);
                    slim__oprun_forward(rk, ptrs, k == 2, seed, step, 0.1f);
                    slim__oprun_backward(rk, ptrs, (const float *const *)rwf, apart, k == 2, seed,
                                         step);
                    copy_bufs(in, in0, c->n_in);
                    slim__oprun_forward(rk, ptrs, k == 2, seed, step, 0.1f);
                    slim__oprun_backward(rk, ptrs, dout, over, k == 2, seed, step);
                    bool same = true;
                    for (int m = 0; m < c->n_in; m++)
                        if (apart[m])
                            same = same &&
                                   memcmp(apart[m], over[m], (size_t)in[m].n * sizeof(float)) == 0;
                    harness_ok(same,
                               "%s: backward %s with input %d's gradient over output %d's is "
                               "bit-identical",
                               label, kernel_names[k], i, j);
                    for (int m = 0; m < c->n_in; m++) {
                        free(apart[m]);
                        free(over[m]);
                    }
                }
            }
        for (int i = 0; !c->no_fd && i < c->n_in; i++) {
            if (!din[i])
                continue;
            /* sample up to 24 elements, always including the first and last */
            int64_t n = in[i].n, samples = n < 24 ? n : 24;
            /* differences of the reference forward where there is one: the
             * analytic gradient must be the derivative of the op's definition,
             * and a fast forward that rounds differently (Winograd conv2d: a
             * few 1e-5 relative) would put its rounding noise / eps into the
             * numeric one */
            const bool fd_ref = d->forward_ref != NULL;
            double worst = 0;
            int64_t wi = -1;
            double wa = 0, wn = 0;
            for (int64_t s = 0; s < samples; s++) {
                int64_t e = n <= 24 ? s : (s == 0 ? 0 : s == 1 ? n - 1 : (int64_t)(rnd() * n));
                float *x = in[i].data;
                float x0 = ((float *)in0[i].data)[e];
                copy_bufs(in, in0, c->n_in);
                x[e] = x0 + (float)eps;
                double hplus = (double)x[e] - x0;
                slim__oprun_forward(r1, ptrs, fd_ref, seed, step, 0.1f);
                double lp = loss_of(r1, (const double *const *)rw);
                copy_bufs(in, in0, c->n_in);
                x[e] = x0 - (float)eps;
                double hminus = x0 - (double)x[e];
                slim__oprun_forward(r1, ptrs, fd_ref, seed, step, 0.1f);
                double lm = loss_of(r1, (const double *const *)rw);
                double num = (lp - lm) / (hplus + hminus);
                double an = din[i][e];
                double errv = fabs(an - num) / (1e-2 + 0.5 * (fabs(an) + fabs(num)));
                if (fabs(an - num) < 1e-4)
                    errv = 0; /* both tiny */
                if (!(errv <= worst)) {
                    worst = isnan(errv) ? INFINITY : errv;
                    wi = e;
                    wa = an;
                    wn = num;
                }
            }
            bool ok = worst <= grad_tol;
            harness_ok(
                ok, "%s: gradient of input %d vs finite differences (%lld samples, max err %.2g)",
                label, i, (long long)samples, worst);
            if (!ok)
                harness_diag("element %lld: analytic %.8g, numeric %.8g", (long long)wi, wa, wn);
        }
        for (int j = 0; j < SLIM__MAX_OUTPUTS; j++) {
            free(rw[j]);
            free(rwf[j]);
        }
        for (int i = 0; i < HARNESS_MAX_IN; i++) {
            free(din[i]);
            free(din_ref[i]);
        }
    }
    for (int j = 0; j < inf->n_out; j++)
        free(ref[j].data);
out:
    slim__oprun_free(r1);
    slim__oprun_free(r3);
    slim_attrs_free(a);
    for (int i = 0; i < c->n_in; i++) {
        free(in[i].data);
        free(in0[i].data);
    }
    return n_failed - failed_before;
}
