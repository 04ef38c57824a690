/* runtime/ckpt_reader.c - one reader over every checkpoint format (see
 * ckpt_reader.h): entries, lookups, type conversion, TensorFlow's naming
 * conventions. The bottom of the checkpoint readers: the back ends (slim's
 * format in ckpt_slim.c, TensorFlow's in interop/tf_checkpoint*.c) fill a
 * slim__ckpt through it, and ckpt_open.c finds the file and picks the back end. */
#include "runtime/ckpt_reader.h"

#include "core/error.h"
#include "interop/tf_checkpoint.h"
#include "interop/tf_table.h"

#include <slim/data.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "checkpoint tensors are little-endian: add byte swapping for this target"
#endif

/* ---- types ---------------------------------------------------------------- */

int slim__dt_size(int t)
{
    switch (t) {
    case SLIM__DT_FLOAT:
    case SLIM__DT_INT32:
    case SLIM__DT_UINT32: return 4;
    case SLIM__DT_DOUBLE:
    case SLIM__DT_INT64:
    case SLIM__DT_UINT64:
    case SLIM__DT_COMPLEX64: return 8;
    case SLIM__DT_UINT8:
    case SLIM__DT_INT8:
    case SLIM__DT_BOOL: return 1;
    case SLIM__DT_INT16:
    case SLIM__DT_UINT16:
    case SLIM__DT_HALF:
    case SLIM__DT_BFLOAT16: return 2;
    case SLIM__DT_COMPLEX128: return 16;
    case 11:
    case 12: return 1; /* qint8, quint8 */
    case 13: return 4; /* qint32 */
    case 15:
    case 16: return 2; /* qint16, quint16 */
    default: return 0;
    }
}

const char *slim__dt_name(int t)
{
    static const char *names[] = {
        [1] = "float",    [2] = "double",      [3] = "int32",   [4] = "uint8",
        [5] = "int16",    [6] = "int8",        [7] = "string",  [8] = "complex64",
        [9] = "int64",    [10] = "bool",       [11] = "qint8",  [12] = "quint8",
        [13] = "qint32",  [14] = "bfloat16",   [15] = "qint16", [16] = "quint16",
        [17] = "uint16",  [18] = "complex128", [19] = "half",   [20] = "resource",
        [21] = "variant", [22] = "uint32",     [23] = "uint64"};
    if (t > 0 && t < (int)(sizeof names / sizeof *names) && names[t])
        return names[t];
    static _Thread_local char buf[32];
    snprintf(buf, sizeof buf, "dtype %d", t);
    return buf;
}

bool slim__dt_is_real(int t)
{
    return t == SLIM__DT_FLOAT || t == SLIM__DT_HALF || t == SLIM__DT_BFLOAT16 ||
           t == SLIM__DT_DOUBLE;
}

int64_t slim__ckpt_numel(int rank, const int64_t *dim)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dim[i] < 0)
            return -1;
        if (dim[i] && n > INT64_MAX / dim[i])
            return -1;
        n *= dim[i];
    }
    return n;
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0x1f)
        bits = sign | 0x7f800000u | (man << 13); /* inf, nan */
    else if (exp)
        bits = sign | ((exp + 112) << 23) | (man << 13);
    else if (!man)
        bits = sign;
    else { /* subnormal: normalize */
        int e = -1;
        do {
            e++;
            man <<= 1;
        } while (!(man & 0x400));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ff) << 13);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ---- entries -------------------------------------------------------------- */

slim__ckpt_entry *slim__ckpt_add(slim__ckpt *c, const char *name)
{
    if (c->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 64;
        slim__ckpt_entry *e = realloc(c->e, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        c->e = e;
        c->cap = cap;
    }
    slim__ckpt_entry *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->name = strdup(name);
    if (!e->name)
        return NULL;
    e->slot_index = -1;
    c->n++;
    return e;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const slim__ckpt_entry *)a)->name, ((const slim__ckpt_entry *)b)->name);
}

int slim__ckpt_find(const slim__ckpt *c, const char *name)
{
    int lo = 0, hi = c->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2, r = strcmp(c->e[mid].name, name);
        if (!r)
            return mid;
        if (r < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

int slim__ckpt_count(const slim__ckpt *c)
{
    return c->n;
}

const slim__ckpt_entry *slim__ckpt_at(const slim__ckpt *c, int i)
{
    return i >= 0 && i < c->n ? &c->e[i] : NULL;
}

const char *slim__ckpt_path(const slim__ckpt *c)
{
    return c->path;
}

slim__ckpt_format slim__ckpt_format_of(const slim__ckpt *c)
{
    return c->format;
}

const char *slim__ckpt_describe(const slim__ckpt *c)
{
    return c->desc;
}

const Slimckpt__CheckpointHeader *slim__ckpt_header(const slim__ckpt *c)
{
    return c->header;
}

int64_t slim__ckpt_global_step(const slim__ckpt *c)
{
    return c->global_step;
}

bool slim__ckpt_has_ema(const slim__ckpt *c)
{
    for (int i = 0; i < c->n; i++)
        if (c->e[i].kind == SLIM__CK_EMA)
            return true;
    return false;
}

/* ---- TensorFlow's names ------------------------------------------------------ */

static const struct {
    const char *op, *tf;
} optimizers[] = {
    {"momentum_update", "Momentum"}, {"rmsprop_update", "RMSProp"},   {"adam_update", "Adam"},
    {"adagrad_update", "Adagrad"},   {"adadelta_update", "Adadelta"}, {"ftrl_update", "Ftrl"},
};

const char *slim__tf_optimizer_name(const char *op)
{
    for (size_t i = 0; op && i < sizeof optimizers / sizeof *optimizers; i++)
        if (!strcmp(op, optimizers[i].op))
            return optimizers[i].tf;
    return NULL;
}

void slim__tf_slot_suffix(const char *op, int k, char *buf, size_t n)
{
    const char *tf = slim__tf_optimizer_name(op);
    if (!tf)
        snprintf(buf, n, "slot_%d", k);
    else if (k == 0)
        snprintf(buf, n, "%s", tf);
    else
        snprintf(buf, n, "%s_%d", tf, k);
}

/* Slot variables TensorFlow's optimizers name VAR/NAME or VAR/NAME_K. */
static const char *const tf_slot_names[] = {"Momentum",  "RMSProp",         "Adam",
                                            "Adagrad",   "Adadelta",        "Ftrl",
                                            "AdagradDA", "ProximalAdagrad", "Nadam"};

static int slot_suffix_index(const char *seg)
{
    for (size_t i = 0; i < sizeof tf_slot_names / sizeof *tf_slot_names; i++) {
        size_t l = strlen(tf_slot_names[i]);
        if (strncmp(seg, tf_slot_names[i], l) != 0)
            continue;
        if (!seg[l])
            return 0;
        if (seg[l] == '_' && isdigit((unsigned char)seg[l + 1])) {
            char *end;
            long k = strtol(seg + l + 1, &end, 10);
            if (!*end && k > 0 && k < 16)
                return (int)k;
        }
    }
    return -1;
}

static const char *last_segment(const char *name)
{
    const char *s = strrchr(name, '/');
    return s ? s + 1 : name;
}

static slim_status set_var(slim__ckpt_entry *e, const char *name, size_t len)
{
    e->var = strndup(name, len);
    return e->var ? SLIM_OK : SLIM_ENOMEM;
}

static slim_status classify(slim__ckpt *c, slim__ckpt_entry *e)
{
    const char *n = e->name, *seg = last_segment(n);
    size_t len = strlen(n);
    if (e->kind != SLIM__CK_VALUE)
        return SLIM_OK; /* the back end knew (slim's own format, TF2 object graphs) */
    if (!strcmp(n, "global_step")) {
        e->kind = SLIM__CK_STEP;
        return SLIM_OK;
    }
    if (!strcmp(n, "_CHECKPOINTABLE_OBJECT_GRAPH") || !strcmp(n, SLIM__TF_HEADER_KEY)) {
        e->kind = SLIM__CK_META;
        return SLIM_OK;
    }
    if (!strcmp(seg, "beta1_power") || !strcmp(seg, "beta2_power")) {
        e->kind = SLIM__CK_OPT;
        return SLIM_OK;
    }
    size_t ls = strlen(SLIM__CKPT_EMA_SUFFIX);
    if (len > ls && !strcmp(n + len - ls, SLIM__CKPT_EMA_SUFFIX)) {
        e->kind = SLIM__CK_EMA;
        return set_var(e, n, len - ls);
    }
    int k = seg != n ? slot_suffix_index(seg) : -1;
    if (k >= 0) {
        /* only when the variable it would belong to is there too */
        char *var = strndup(n, (size_t)(seg - 1 - n));
        if (!var)
            return SLIM_ENOMEM;
        if (slim__ckpt_find(c, var) >= 0) {
            e->kind = SLIM__CK_SLOT;
            e->var = var;
            e->slot = strdup(seg);
            e->slot_index = k;
            return e->slot ? SLIM_OK : SLIM_ENOMEM;
        }
        free(var);
    }
    return SLIM_OK;
}

slim_status slim__ckpt_finish(slim__ckpt *c, bool tf_names, slim_error *err)
{
    if (c->n > 1)
        qsort(c->e, (size_t)c->n, sizeof *c->e, by_name);
    for (int i = 1; i < c->n; i++)
        if (!strcmp(c->e[i].name, c->e[i - 1].name))
            return slim__tf_error(err, SLIM_ECORRUPT, "%s: the name '%s' appears twice", c->path,
                                  c->e[i].name);
    for (int i = 0; tf_names && i < c->n; i++)
        if (classify(c, &c->e[i]))
            return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    c->global_step = c->header ? c->header->global_step : -1;
    int gs = slim__ckpt_find(c, "global_step");
    if (gs >= 0 && c->e[gs].numel == 1 &&
        (c->e[gs].dtype == SLIM__DT_INT64 || c->e[gs].dtype == SLIM__DT_INT32)) {
        void *data;
        size_t len;
        slim_status st = slim__ckpt_read_raw(c, gs, &data, &len, err);
        if (st)
            return st;
        if (c->e[gs].dtype == SLIM__DT_INT64) {
            int64_t v;
            memcpy(&v, data, 8);
            c->global_step = v;
        } else {
            int32_t v;
            memcpy(&v, data, 4);
            c->global_step = v;
        }
        free(data);
    }
    int h = c->header ? -1 : slim__ckpt_find(c, SLIM__TF_HEADER_KEY);
    if (h >= 0 && c->e[h].dtype == SLIM__DT_STRING && c->e[h].numel == 1) {
        void *data;
        size_t len;
        slim_status st = slim__ckpt_read_raw(c, h, &data, &len, err);
        if (st)
            return st;
        uint64_t sl;
        memcpy(&sl, data, 8);
        if (sl <= len - 8)
            c->header = slimckpt__checkpoint_header__unpack(NULL, (size_t)sl, (uint8_t *)data + 8);
        free(data);
        if (!c->header || !c->header->format || strcmp(c->header->format, "slim-checkpoint"))
            return slim__tf_error(err, SLIM_ECORRUPT, "%s: its %s tensor is not slim's run header",
                                  c->path, SLIM__TF_HEADER_KEY);
        if (gs < 0)
            c->global_step = c->header->global_step;
    }
    return SLIM_OK;
}

/* ---- reading -------------------------------------------------------------- */

slim_status slim__ckpt_check_size(slim__ckpt *c, int i, slim_error *err)
{
    const slim__ckpt_entry *e = slim__ckpt_at(c, i);
    if (!e)
        return slim__tf_error(err, SLIM_EINVAL, "no entry %d in %s", i, c->path);
    int es = slim__dt_size(e->dtype);
    int64_t max = c->ops->bound ? c->ops->bound(c, e) : INT64_MAX;
    int64_t want = e->dtype == SLIM__DT_STRING ? e->numel * 8 : e->numel;
    if (es && e->numel > INT64_MAX / es)
        want = INT64_MAX;
    else if (es)
        want = e->numel * es;
    if (want > max)
        return slim__tf_error(
            err, SLIM_ECORRUPT,
            "%s: '%s' claims %lld values (%lld bytes), more than its file can hold "
            "(%lld bytes): the checkpoint is damaged",
            c->path, e->name, (long long)e->numel, (long long)want, (long long)max);
    return SLIM_OK;
}

slim_status slim__ckpt_read_raw(slim__ckpt *c, int i, void **data, size_t *len, slim_error *err)
{
    *data = NULL;
    *len = 0;
    const slim__ckpt_entry *e = slim__ckpt_at(c, i);
    if (!e)
        return slim__tf_error(err, SLIM_EINVAL, "no entry %d in %s", i, c->path);
    slim_status cs = slim__ckpt_check_size(c, i, err);
    if (cs)
        return cs;
    if (e->dtype == SLIM__DT_STRING) {
        slim__buf out = {0};
        slim_status st = c->ops->read(c, e, NULL, &out, err);
        if (!st && out.failed)
            st = slim__tf_error(err, SLIM_ENOMEM, "out of memory reading '%s'", e->name);
        if (st) {
            slim__buf_free(&out);
            return st;
        }
        *data = out.p ? out.p : malloc(1);
        *len = out.n;
        return *data ? SLIM_OK : slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    }
    int es = slim__dt_size(e->dtype);
    if (!es)
        return slim__tf_error(err, SLIM_EUNSUPPORTED,
                              "%s: '%s' has %s elements, which slim cannot read", c->path, e->name,
                              slim__dt_name(e->dtype));
    if (e->numel > (int64_t)(SIZE_MAX / 2) / es)
        return slim__tf_error(err, SLIM_ENOMEM, "%s: '%s' is too large", c->path, e->name);
    size_t n = (size_t)e->numel * (size_t)es;
    void *p = malloc(n ? n : 1);
    if (!p)
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory reading '%s' (%zu bytes)", e->name,
                              n);
    slim_status st = c->ops->read(c, e, p, NULL, err);
    if (st) {
        free(p);
        return st;
    }
    *data = p;
    *len = n;
    return SLIM_OK;
}

slim_status slim__ckpt_read_f32(slim__ckpt *c, int i, float *dst, int64_t n, slim_error *err)
{
    const slim__ckpt_entry *e = slim__ckpt_at(c, i);
    if (!e || e->numel != n)
        return slim__tf_error(err, SLIM_EINVAL, "reading '%s': %lld values, not %lld",
                              e ? e->name : "?", e ? (long long)e->numel : -1LL, (long long)n);
    slim_status cs = slim__ckpt_check_size(c, i, err);
    if (cs)
        return cs;
    if (e->dtype == SLIM__DT_FLOAT)
        return c->ops->read(c, e, dst, NULL, err);
    if (!slim__dt_is_real(e->dtype))
        return slim__tf_error(err, SLIM_ETYPE, "%s: '%s' holds %s values, not real numbers",
                              c->path, e->name, slim__dt_name(e->dtype));
    void *raw;
    size_t len;
    slim_status st = slim__ckpt_read_raw(c, i, &raw, &len, err);
    if (st)
        return st;
    for (int64_t k = 0; k < n; k++) {
        if (e->dtype == SLIM__DT_DOUBLE) {
            double d;
            memcpy(&d, (const char *)raw + 8 * k, 8);
            dst[k] = (float)d;
        } else {
            uint16_t h;
            memcpy(&h, (const char *)raw + 2 * k, 2);
            if (e->dtype == SLIM__DT_HALF) {
                dst[k] = half_to_f32(h);
            } else {
                uint32_t b = (uint32_t)h << 16;
                memcpy(&dst[k], &b, 4);
            }
        }
    }
    free(raw);
    return SLIM_OK;
}

slim_status slim__ckpt_verify_all(slim__ckpt *c, slim_error *err)
{
    if (c->format == SLIM__CKPT_SLIM)
        return SLIM_OK; /* opening checked every record and the footer */
    for (int i = 0; i < c->n; i++) {
        if (!slim__dt_size(c->e[i].dtype) && c->e[i].dtype != SLIM__DT_STRING)
            continue; /* resource handles and the like: nothing slim could use */
        void *data;
        size_t len;
        slim_status st = slim__ckpt_read_raw(c, i, &data, &len, err);
        free(data);
        if (st)
            return st;
    }
    return SLIM_OK;
}

void slim__ckpt_close(slim__ckpt *c)
{
    if (!c)
        return;
    if (c->ops && c->ops->close)
        c->ops->close(c);
    for (int i = 0; i < c->n; i++) {
        free(c->e[i].name);
        free(c->e[i].key);
        free(c->e[i].var);
        free(c->e[i].slot);
    }
    free(c->e);
    if (c->header)
        slimckpt__checkpoint_header__free_unpacked(c->header, NULL);
    free(c->path);
    free(c);
}

slim_status slim__ckpt_new(const char *path, slim__ckpt **out, slim_error *err)
{
    slim__ckpt *c = calloc(1, sizeof *c);
    if (c)
        c->path = strdup(path);
    if (!c || !c->path) {
        free(c);
        return slim__tf_error(err, SLIM_ENOMEM, "out of memory");
    }
    c->global_step = -1;
    *out = c;
    return SLIM_OK;
}
