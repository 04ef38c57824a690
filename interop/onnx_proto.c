/*
 * interop/onnx_proto.c - ONNX protobuf files -> plain C values (see onnx_proto.h).
 *
 * Tensor encodings follow onnx.proto's TensorProto comments: raw_data is
 * fixed-width little-endian (bool one byte each); otherwise float_data,
 * double_data, int32_data (int8..uint16, bool, int32, and float16/bfloat16
 * as their 16 bits), int64_data and uint64_data (uint32, uint64) hold the
 * elements.
 */
#include "interop/onnx_proto.h"
#include "interop/pb_explain.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/file.h"

uint8_t *slim__ox_read_file(const char *path, size_t max, size_t *len, slim_error *err)
{
    uint8_t *buf = NULL;
    *len = 0;
    if (slim__file_read(path, NULL, max, &buf, len, err) != SLIM_OK)
        return NULL;
    return buf;
}

void slim__ox_model_free(Onnx__ModelProto *m)
{
    if (m)
        onnx__model_proto__free_unpacked(m, NULL);
}

slim_status slim__ox_model_unpack(const char *file, const uint8_t *buf, size_t len,
                                  Onnx__ModelProto **out, slim_error *err)
{
    *out = NULL;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) {
        char why[600];
        if (slim__pb_explain(&onnx__model_proto__descriptor, buf, len, why, sizeof why))
            return slim__error(err, SLIM_ECORRUPT, "%s: not an ONNX model: %s", file, why);
        return slim__error(err, SLIM_ECORRUPT,
                           "%s: not an ONNX model (the protobuf ModelProto does not parse)", file);
    }
    const Onnx__GraphProto *g = m->graph;
    if (!g) {
        slim__ox_model_free(m);
        return slim__error(err, SLIM_ECORRUPT, "%s: the ONNX model has no graph", file);
    }
    for (size_t k = 0; k < g->n_node; k++) {
        const Onnx__NodeProto *n = g->node[k];
        if (!n->op_type || !n->op_type[0]) {
            slim_status st = slim__error(err, SLIM_ECORRUPT, "%s: node %zu ('%s') has no op_type",
                                         file, k, n->name ? n->name : "");
            slim__ox_model_free(m); /* after the message: it names the node */
            return st;
        }
    }
    *out = m;
    return SLIM_OK;
}

slim_status slim__ox_model_load(const char *path, Onnx__ModelProto **out, slim_error *err)
{
    size_t len;
    *out = NULL;
    uint8_t *buf = slim__ox_read_file(path, SLIM__OX_MAX_FILE, &len, err);
    if (!buf)
        return err ? err->code : SLIM_EIO;
    slim_status st = slim__ox_model_unpack(path, buf, len, out, err);
    free(buf);
    return st;
}

bool slim__ox_elem_is_float(int elem)
{
    return elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT ||
           elem == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE ||
           elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
           elem == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
}

const char *slim__ox_elem_name(int elem)
{
    static const char *const names[] = {"undefined",  "float",   "uint8",  "int8",   "uint16",
                                        "int16",      "int32",   "int64",  "string", "bool",
                                        "float16",    "double",  "uint32", "uint64", "complex64",
                                        "complex128", "bfloat16"};
    if (elem >= 0 && elem < (int)(sizeof(names) / sizeof(names[0])))
        return names[elem];
    return "unknown";
}

int64_t slim__ox_numel(int rank, const int64_t *dim)
{
    int64_t n = 1;
    for (int d = 0; d < rank; d++) {
        if (dim[d] < 0)
            return -1;
        if (dim[d] == 0)
            n = 0;
        else if (n > SLIM__OX_MAX_ELEMS / dim[d])
            return -1;
        else
            n *= dim[d];
    }
    return n;
}

const char *slim__ox_dims_str(int rank, const int64_t *dim, char *buf, size_t n)
{
    size_t len = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < rank && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "", (long long)dim[i]);
    if (len < n)
        snprintf(buf + len, n - len, ")");
    return buf;
}

/* Bytes per element in raw_data, 0 for types slim does not read. */
static size_t raw_size(int elem)
{
    switch (elem) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return 8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8:
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return 1;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16:
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return 2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return 4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64:
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return 8;
    default: return 0;
    }
}

/* IEEE 754 half (binary16) to float: exact. */
static float half_to_float(uint16_t h)
{
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 1024), e - 25);
    return sign ? -v : v;
}

/* bfloat16: the top 16 bits of a float. */
static float bf16_to_float(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float v;
    memcpy(&v, &u, 4);
    return v;
}

static uint64_t le_bits(const uint8_t *p, size_t sz)
{
    uint64_t u = 0;
    for (size_t b = sz; b-- > 0;)
        u = u << 8 | p[b];
    return u;
}

/* Element k of raw_data (little-endian) as float. */
static float raw_float(int elem, const uint8_t *p)
{
    switch (elem) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: {
        uint32_t u = (uint32_t)le_bits(p, 4);
        float v;
        memcpy(&v, &u, 4);
        return v;
    }
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return half_to_float((uint16_t)le_bits(p, 2));
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return bf16_to_float((uint16_t)le_bits(p, 2));
    default: {
        uint64_t u = le_bits(p, 8);
        double v;
        memcpy(&v, &u, 8);
        return (float)v;
    }
    }
}

static int64_t sign_extend(int elem, uint64_t u)
{
    switch (elem) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return (int8_t)(uint8_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return (int16_t)(uint16_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return (int32_t)(uint32_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return u != 0;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return (uint8_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return (uint16_t)u;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return (uint32_t)u;
    default: return (int64_t)u;
    }
}

bool slim__ox_tensor_alloc(slim__ox_tensor *t, bool is_float, int rank, const int64_t *dim)
{
    memset(t, 0, sizeof(*t));
    if (rank < 0 || rank > SLIM__OX_MAX_DIMS)
        return false;
    int64_t n = slim__ox_numel(rank, dim);
    if (n < 0)
        return false;
    t->elem =
        is_float ? ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT : ONNX__TENSOR_PROTO__DATA_TYPE__INT64;
    t->rank = rank;
    if (rank)
        memcpy(t->dim, dim, (size_t)rank * sizeof(int64_t));
    t->numel = n;
    size_t cnt = (size_t)(n ? n : 1);
    if (is_float)
        t->f = calloc(cnt, sizeof(float));
    else
        t->i = calloc(cnt, sizeof(int64_t));
    return t->f || t->i;
}

slim_status slim__ox_tensor_from_proto(const Onnx__TensorProto *tp, const char *what,
                                       slim__ox_tensor *t, slim_error *err)
{
    memset(t, 0, sizeof(*t));
    int elem = tp->has_data_type ? tp->data_type : 0;
    if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s keeps its data in an external file, which slim does not read "
                           "(save the model with the data inside: onnx.save(model, path, "
                           "save_as_external_data=False))",
                           what);
    if (tp->n_dims > SLIM__OX_MAX_DIMS)
        return slim__error(err, SLIM_EUNSUPPORTED, "%s has rank %zu (slim reads up to %d)", what,
                           tp->n_dims, SLIM__OX_MAX_DIMS);
    int rank = (int)tp->n_dims;
    int64_t numel = slim__ox_numel(rank, tp->dims);
    char ds[160];
    if (numel < 0)
        return slim__error(
            err, SLIM_ECORRUPT, "%s has dims %s: negative, or more than %lld elements", what,
            slim__ox_dims_str(rank, tp->dims, ds, sizeof ds), (long long)SLIM__OX_MAX_ELEMS);
    size_t esz = raw_size(elem);
    if (esz == 0)
        return slim__error(err, SLIM_EUNSUPPORTED,
                           "%s has data type %s (%d), which slim does not read", what,
                           slim__ox_elem_name(elem), elem);
    bool is_f = slim__ox_elem_is_float(elem);
    bool half = elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ||
                elem == ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16;
    /* How many values the file holds, checked before anything is allocated
     * (a hostile file may claim a huge shape with no data behind it). */
    size_t n = (size_t)numel, have;
    if (tp->has_raw_data) {
        if (tp->raw_data.len % esz)
            return slim__error(err, SLIM_ECORRUPT,
                               "%s: raw_data of %zu bytes is not a whole number of %s values", what,
                               tp->raw_data.len, slim__ox_elem_name(elem));
        have = tp->raw_data.len / esz;
    } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
        have = tp->n_float_data;
    } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
        have = tp->n_double_data;
    } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
        have = tp->n_int64_data;
    } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ||
               elem == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64) {
        have = tp->n_uint64_data;
    } else {
        have = tp->n_int32_data; /* the small integer types, bool, float16, bfloat16 */
    }
    if (have != n)
        return slim__error(err, SLIM_ECORRUPT, "%s holds %zu values for dims %s (%zu elements)",
                           what, have, slim__ox_dims_str(rank, tp->dims, ds, sizeof ds), n);
    if (!slim__ox_tensor_alloc(t, is_f, rank, tp->dims))
        return slim__error(err, SLIM_ENOMEM, "out of memory for %s %s", what,
                           slim__ox_dims_str(rank, tp->dims, ds, sizeof ds));
    t->elem = elem;
    for (size_t k = 0; k < n; k++) {
        if (tp->has_raw_data) {
            const uint8_t *p = tp->raw_data.data + k * esz;
            if (is_f)
                t->f[k] = raw_float(elem, p);
            else
                t->i[k] = sign_extend(elem, le_bits(p, esz));
        } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT) {
            t->f[k] = tp->float_data[k];
        } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE) {
            t->f[k] = (float)tp->double_data[k];
        } else if (half) {
            uint16_t h = (uint16_t)tp->int32_data[k];
            t->f[k] = elem == ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16 ? half_to_float(h)
                                                                     : bf16_to_float(h);
        } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__INT64) {
            t->i[k] = tp->int64_data[k];
        } else if (elem == ONNX__TENSOR_PROTO__DATA_TYPE__UINT32 ||
                   elem == ONNX__TENSOR_PROTO__DATA_TYPE__UINT64) {
            t->i[k] = (int64_t)tp->uint64_data[k];
        } else {
            t->i[k] = sign_extend(elem, (uint64_t)(uint32_t)tp->int32_data[k]);
        }
    }
    return SLIM_OK;
}

slim_status slim__ox_tensor_load(const char *path, slim__ox_tensor *t, slim_error *err)
{
    size_t len;
    memset(t, 0, sizeof(*t));
    uint8_t *buf = slim__ox_read_file(path, SLIM__OX_MAX_FILE, &len, err);
    if (!buf)
        return err ? err->code : SLIM_EIO;
    Onnx__TensorProto *tp = onnx__tensor_proto__unpack(NULL, len, buf);
    char why[600] = "";
    if (!tp)
        slim__pb_explain(&onnx__tensor_proto__descriptor, buf, len, why, sizeof why);
    free(buf);
    if (!tp)
        return slim__error(err, SLIM_ECORRUPT, "%s is not a TensorProto%s%s", path,
                           why[0] ? ": " : "", why);
    char what[1100];
    snprintf(what, sizeof what, "tensor file %s", path);
    slim_status st = slim__ox_tensor_from_proto(tp, what, t, err);
    onnx__tensor_proto__free_unpacked(tp, NULL);
    return st;
}

void slim__ox_tensor_fini(slim__ox_tensor *t)
{
    free(t->f);
    free(t->i);
    t->f = NULL;
    t->i = NULL;
}

bool slim__ox_tensor_copy(slim__ox_tensor *dst, const slim__ox_tensor *src)
{
    *dst = *src;
    size_t n = (size_t)(src->numel ? src->numel : 1);
    dst->f = NULL;
    dst->i = NULL;
    if (src->f && !(dst->f = malloc(n * sizeof(float))))
        return false;
    if (src->i && !(dst->i = malloc(n * sizeof(int64_t)))) {
        free(dst->f);
        dst->f = NULL;
        return false;
    }
    if (src->f)
        memcpy(dst->f, src->f, (size_t)src->numel * sizeof(float));
    if (src->i)
        memcpy(dst->i, src->i, (size_t)src->numel * sizeof(int64_t));
    return true;
}

int64_t slim__ox_opset(const Onnx__ModelProto *m)
{
    for (size_t k = 0; k < m->n_opset_import; k++) {
        const Onnx__OperatorSetIdProto *o = m->opset_import[k];
        if (!o->domain || !o->domain[0] || strcmp(o->domain, "ai.onnx") == 0)
            return o->has_version ? o->version : 1;
    }
    return 1;
}

const Onnx__AttributeProto *slim__ox_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t k = 0; k < n->n_attribute; k++)
        if (n->attribute[k]->name && strcmp(n->attribute[k]->name, name) == 0)
            return n->attribute[k];
    return NULL;
}

int64_t slim__ox_attr_int(const Onnx__NodeProto *n, const char *name, int64_t def)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, name);
    return a && a->has_i ? a->i : def;
}

float slim__ox_attr_float(const Onnx__NodeProto *n, const char *name, float def)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, name);
    return a && a->has_f ? a->f : def;
}

const char *slim__ox_attr_str(const Onnx__NodeProto *n, const char *name, const char *def,
                              char *buf, size_t buf_size)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, name);
    if (!a || !a->has_s || buf_size == 0)
        return def;
    size_t len = a->s.len < buf_size - 1 ? a->s.len : buf_size - 1;
    memcpy(buf, a->s.data, len);
    buf[len] = '\0';
    return buf;
}

int slim__ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *out, int max)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, name);
    if (!a)
        return -1;
    for (size_t k = 0; k < a->n_ints && k < (size_t)max; k++)
        out[k] = a->ints[k];
    return a->n_ints > 1 << 20 ? 1 << 20 : (int)a->n_ints;
}

int slim__ox_attr_floats(const Onnx__NodeProto *n, const char *name, float *out, int max)
{
    const Onnx__AttributeProto *a = slim__ox_attr(n, name);
    if (!a)
        return -1;
    for (size_t k = 0; k < a->n_floats && k < (size_t)max; k++)
        out[k] = a->floats[k];
    return a->n_floats > 1 << 20 ? 1 << 20 : (int)a->n_floats;
}

bool slim__ox_has_input(const Onnx__NodeProto *n, size_t i)
{
    return i < n->n_input && n->input[i] && n->input[i][0];
}

bool slim__ox_has_output(const Onnx__NodeProto *n, size_t i)
{
    return i < n->n_output && n->output[i] && n->output[i][0];
}
