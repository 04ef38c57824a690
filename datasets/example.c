/* datasets/example.c - tf.train.Example through protobuf-c (datasets/example.proto).
 *
 * A parsed Example keeps the unpacked protobuf-c message and points into it;
 * values set by the builder are owned copies. Serializing rebuilds a message
 * view over the entries in their stored order, so a parsed Example
 * re-serializes to the same bytes TensorFlow wrote (field by field, in order). */
#include "datasets/example.pb-c.h"
#include "core/error.h"
#include <slim/data.h>

#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *key;
    bool owned; /* key and values are ours (else they point into msg) */
    slim_feature_kind kind;
    size_t n;
    ProtobufCBinaryData *bytes; /* BYTES: n items */
    float *f;                   /* FLOAT */
    int64_t *i;                 /* INT64 */
} entry;

struct slim_example {
    Slimpb__Example *msg; /* unpacked (parse) or NULL */
    entry *e;
    int n, cap;
};

slim_status slim_example_new(slim_example **out, slim_error *err)
{
    *out = calloc(1, sizeof **out);
    return *out ? SLIM_OK : slim__error(err, SLIM_ENOMEM, "out of memory");
}

static void entry_clear(entry *e)
{
    if (!e->owned)
        return;
    free(e->key);
    if (e->bytes)
        for (size_t k = 0; k < e->n; k++)
            free(e->bytes[k].data);
    free(e->bytes);
    free(e->f);
    free(e->i);
}

void slim_example_free(slim_example *ex)
{
    if (!ex)
        return;
    for (int k = 0; k < ex->n; k++)
        entry_clear(&ex->e[k]);
    free(ex->e);
    if (ex->msg)
        slimpb__example__free_unpacked(ex->msg, NULL);
    free(ex);
}

static entry *add_entry(slim_example *ex)
{
    if (ex->n == ex->cap) {
        int cap = ex->cap ? 2 * ex->cap : 16;
        entry *e = realloc(ex->e, (size_t)cap * sizeof *e);
        if (!e)
            return NULL;
        ex->e = e;
        ex->cap = cap;
    }
    entry *e = &ex->e[ex->n++];
    memset(e, 0, sizeof *e);
    return e;
}

slim_status slim_example_parse(const void *data, size_t len, slim_example **out, slim_error *err)
{
    *out = NULL;
    Slimpb__Example *msg = slimpb__example__unpack(NULL, len, data);
    if (!msg)
        return slim__error(err, SLIM_ECORRUPT, "not a tf.train.Example (protobuf parse failed)");
    slim_example *ex = calloc(1, sizeof *ex);
    if (!ex) {
        slimpb__example__free_unpacked(msg, NULL);
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    }
    ex->msg = msg;
    Slimpb__Features *fs = msg->features;
    size_t nf = fs ? fs->n_feature : 0;
    for (size_t k = 0; k < nf; k++) {
        Slimpb__FeatureEntry *fe = fs->feature[k];
        entry *e = add_entry(ex);
        if (!e) {
            slim_example_free(ex);
            return slim__error(err, SLIM_ENOMEM, "out of memory");
        }
        e->key = fe->key ? fe->key : "";
        Slimpb__Feature *f = fe->value;
        if (!f)
            continue;
        switch (f->kind_case) {
        case SLIMPB__FEATURE__KIND_BYTES_LIST:
            e->kind = SLIM_FEATURE_BYTES;
            e->n = f->bytes_list->n_value;
            e->bytes = f->bytes_list->value;
            break;
        case SLIMPB__FEATURE__KIND_FLOAT_LIST:
            e->kind = SLIM_FEATURE_FLOAT;
            e->n = f->float_list->n_value;
            e->f = f->float_list->value;
            break;
        case SLIMPB__FEATURE__KIND_INT64_LIST:
            e->kind = SLIM_FEATURE_INT64;
            e->n = f->int64_list->n_value;
            e->i = f->int64_list->value;
            break;
        default: break;
        }
    }
    *out = ex;
    return SLIM_OK;
}

int slim_example_count(const slim_example *ex)
{
    return ex->n;
}

const char *slim_example_key(const slim_example *ex, int i, slim_feature_kind *kind,
                             size_t *n_values)
{
    if (i < 0 || i >= ex->n)
        return NULL;
    if (kind)
        *kind = ex->e[i].kind;
    if (n_values)
        *n_values = ex->e[i].n;
    return ex->e[i].key;
}

/* The last entry with the key wins, as in a protobuf map. */
static const entry *find(const slim_example *ex, const char *key)
{
    for (int k = ex->n - 1; k >= 0; k--)
        if (!strcmp(ex->e[k].key, key))
            return &ex->e[k];
    return NULL;
}

slim_status slim_example_bytes(const slim_example *ex, const char *key, size_t i,
                               const uint8_t **data, size_t *len)
{
    const entry *e = find(ex, key);
    if (!e)
        return SLIM_ENOTFOUND;
    if (e->kind != SLIM_FEATURE_BYTES)
        return SLIM_ETYPE;
    if (i >= e->n)
        return SLIM_ENOTFOUND;
    *data = e->bytes[i].data;
    *len = e->bytes[i].len;
    return SLIM_OK;
}

slim_status slim_example_int64s(const slim_example *ex, const char *key, const int64_t **vals,
                                size_t *n)
{
    const entry *e = find(ex, key);
    if (!e)
        return SLIM_ENOTFOUND;
    if (e->kind != SLIM_FEATURE_INT64)
        return SLIM_ETYPE;
    *vals = e->i;
    *n = e->n;
    return SLIM_OK;
}

slim_status slim_example_floats(const slim_example *ex, const char *key, const float **vals,
                                size_t *n)
{
    const entry *e = find(ex, key);
    if (!e)
        return SLIM_ENOTFOUND;
    if (e->kind != SLIM_FEATURE_FLOAT)
        return SLIM_ETYPE;
    *vals = e->f;
    *n = e->n;
    return SLIM_OK;
}

/* The entry for key, replacing an existing one (cleared, same position). */
static entry *set_entry(slim_example *ex, const char *key)
{
    entry *e = NULL;
    for (int k = 0; k < ex->n; k++)
        if (!strcmp(ex->e[k].key, key))
            e = &ex->e[k];
    if (e) {
        entry_clear(e);
        memset(e, 0, sizeof *e);
    } else if (!(e = add_entry(ex))) {
        return NULL;
    }
    e->owned = true;
    e->key = strdup(key);
    if (!e->key) {
        ex->n--;
        return NULL;
    }
    return e;
}

slim_status slim_example_set_bytes(slim_example *ex, const char *key, const void *data, size_t len)
{
    entry *e = set_entry(ex, key);
    if (!e)
        return SLIM_ENOMEM;
    e->kind = SLIM_FEATURE_BYTES;
    e->bytes = calloc(1, sizeof *e->bytes);
    if (!e->bytes)
        return SLIM_ENOMEM;
    e->n = 1;
    e->bytes[0].len = len;
    e->bytes[0].data = malloc(len ? len : 1);
    if (!e->bytes[0].data)
        return SLIM_ENOMEM;
    if (len)
        memcpy(e->bytes[0].data, data, len);
    return SLIM_OK;
}

slim_status slim_example_set_int64s(slim_example *ex, const char *key, const int64_t *vals,
                                    size_t n)
{
    entry *e = set_entry(ex, key);
    if (!e)
        return SLIM_ENOMEM;
    e->kind = SLIM_FEATURE_INT64;
    e->n = n;
    e->i = malloc((n ? n : 1) * sizeof *e->i);
    if (!e->i)
        return SLIM_ENOMEM;
    if (n)
        memcpy(e->i, vals, n * sizeof *e->i);
    return SLIM_OK;
}

slim_status slim_example_set_floats(slim_example *ex, const char *key, const float *vals, size_t n)
{
    entry *e = set_entry(ex, key);
    if (!e)
        return SLIM_ENOMEM;
    e->kind = SLIM_FEATURE_FLOAT;
    e->n = n;
    e->f = malloc((n ? n : 1) * sizeof *e->f);
    if (!e->f)
        return SLIM_ENOMEM;
    if (n)
        memcpy(e->f, vals, n * sizeof *e->f);
    return SLIM_OK;
}

slim_status slim_example_serialize(const slim_example *ex, uint8_t **out, size_t *len,
                                   slim_error *err)
{
    *out = NULL;
    *len = 0;
    size_t n = (size_t)ex->n;
    /* One block: entry pointers, entries, features, lists. */
    Slimpb__FeatureEntry **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    Slimpb__FeatureEntry *fes = calloc(n ? n : 1, sizeof *fes);
    Slimpb__Feature *fs = calloc(n ? n : 1, sizeof *fs);
    Slimpb__BytesList *bl = calloc(n ? n : 1, sizeof *bl);
    Slimpb__FloatList *fl = calloc(n ? n : 1, sizeof *fl);
    Slimpb__Int64List *il = calloc(n ? n : 1, sizeof *il);
    slim_status st = SLIM_OK;
    if (!ptrs || !fes || !fs || !bl || !fl || !il) {
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
        goto done;
    }
    for (size_t k = 0; k < n; k++) {
        const entry *e = &ex->e[k];
        slimpb__feature_entry__init(&fes[k]);
        slimpb__feature__init(&fs[k]);
        fes[k].key = e->key;
        fes[k].value = &fs[k];
        switch (e->kind) {
        case SLIM_FEATURE_BYTES:
            slimpb__bytes_list__init(&bl[k]);
            bl[k].n_value = e->n;
            bl[k].value = e->bytes;
            fs[k].kind_case = SLIMPB__FEATURE__KIND_BYTES_LIST;
            fs[k].bytes_list = &bl[k];
            break;
        case SLIM_FEATURE_FLOAT:
            slimpb__float_list__init(&fl[k]);
            fl[k].n_value = e->n;
            fl[k].value = e->f;
            fs[k].kind_case = SLIMPB__FEATURE__KIND_FLOAT_LIST;
            fs[k].float_list = &fl[k];
            break;
        case SLIM_FEATURE_INT64:
            slimpb__int64_list__init(&il[k]);
            il[k].n_value = e->n;
            il[k].value = e->i;
            fs[k].kind_case = SLIMPB__FEATURE__KIND_INT64_LIST;
            fs[k].int64_list = &il[k];
            break;
        default: break;
        }
        ptrs[k] = &fes[k];
    }
    Slimpb__Features features = SLIMPB__FEATURES__INIT;
    features.n_feature = n;
    features.feature = ptrs;
    Slimpb__Example msg = SLIMPB__EXAMPLE__INIT;
    msg.features = &features;
    size_t sz = slimpb__example__get_packed_size(&msg);
    *out = malloc(sz ? sz : 1);
    if (!*out) {
        st = slim__error(err, SLIM_ENOMEM, "out of memory");
        goto done;
    }
    *len = slimpb__example__pack(&msg, *out);
done:
    free(ptrs);
    free(fes);
    free(fs);
    free(bl);
    free(fl);
    free(il);
    return st;
}
