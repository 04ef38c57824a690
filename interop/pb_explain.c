/*
 * interop/pb_explain.c - the offset and field of a protobuf defect (see
 * pb_explain.h). The wire format (protobuf's "Encoding" page): a message is
 * fields, each a varint tag (field number << 3 | wire type) and a value:
 * 0 varint, 1 eight bytes, 2 a varint length and that many bytes, 5 four
 * bytes; 3 and 4 delimit groups (which protobuf-c does not read), 6 and 7
 * are no wire type. The limits are protobuf-c's: a tag in at most 5 bytes, a
 * varint in at most 10, a length in at most 5 (32 bits).
 */
#include "interop/pb_explain.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

typedef struct walk {
    const uint8_t *buf;
    char *path; /* "graph.node[3]" */
    size_t path_len, path_cap;
    char *out;
    size_t out_n;
} walk;

static bool defect(walk *w, size_t off, const char *fmt, ...) SLIM_PRINTF(3, 4);

static bool defect(walk *w, size_t off, const char *fmt, ...)
{
    int k = snprintf(w->out, w->out_n, "offset %zu", off);
    if (k < 0 || (size_t)k >= w->out_n)
        return true;
    size_t used = (size_t)k;
    if (w->path_len) {
        k = snprintf(w->out + used, w->out_n - used, " (%s)", w->path);
        if (k < 0 || (size_t)k >= w->out_n - used)
            return true;
        used += (size_t)k;
    }
    k = snprintf(w->out + used, w->out_n - used, ": ");
    if (k < 0 || (size_t)k >= w->out_n - used)
        return true;
    used += (size_t)k;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->out + used, w->out_n - used, fmt, ap);
    va_end(ap);
    return true;
}

/* A varint at buf[*pos] before end, in at most max bytes: 1 read, 0 cut off
 * by end, -1 longer than max. */
static int varint(const uint8_t *buf, size_t *pos, size_t end, int max, uint64_t *v)
{
    uint64_t x = 0;
    for (int i = 0; i < max; i++) {
        if (*pos + (size_t)i >= end)
            return 0;
        uint8_t b = buf[*pos + (size_t)i];
        if (i < 10)
            x |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *pos += (size_t)i + 1;
            *v = x;
            return 1;
        }
    }
    return -1;
}

/* The wire type a field's values have unpacked. */
static int wire_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE: return 1;
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT: return 5;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE: return 2;
    default: return 0;
    }
}

static const char *const wire_names[8] = {"varint",    "8 bytes", "length-delimited", "group start",
                                          "group end", "4 bytes", "6 (none)",         "7 (none)"};

/* Appends ".name" or ".name[i]" to the path; returns the length to restore. */
static size_t path_push(walk *w, const char *name, long idx)
{
    size_t old = w->path_len;
    int k = idx >= 0
                ? snprintf(w->path + old, w->path_cap - old, "%s%s[%ld]", old ? "." : "", name, idx)
                : snprintf(w->path + old, w->path_cap - old, "%s%s", old ? "." : "", name);
    if (k > 0)
        w->path_len = old + (size_t)k < w->path_cap ? old + (size_t)k : w->path_cap - 1;
    return old;
}

static void path_pop(walk *w, size_t old)
{
    w->path_len = old;
    w->path[old] = '\0';
}

/* A packed array of a numeric field in [pos, end). */
static bool packed(walk *w, const ProtobufCFieldDescriptor *f, size_t pos, size_t end)
{
    int wt = wire_of(f->type);
    size_t size = end - pos;
    if (wt == 1 || wt == 5) {
        size_t el = wt == 1 ? 8 : 4;
        if (size % el)
            return defect(w, pos, "a packed array of %zu bytes, not a whole number of %zu-byte %s",
                          size, el, f->name);
        return false;
    }
    while (pos < end) {
        uint64_t v;
        size_t at = pos;
        int r = varint(w->buf, &pos, end, 10, &v);
        if (r <= 0)
            return defect(w, at, "a packed varint %s", r ? "longer than 10 bytes" : "cut off");
    }
    return false;
}

static bool message(walk *w, const ProtobufCMessageDescriptor *d, size_t pos, size_t end, int depth)
{
    enum { MAX_COUNTED = 64 };
    uint32_t seen[MAX_COUNTED] = {0};
    if (depth > SLIM__PB_MAX_DEPTH)
        return false;
    while (pos < end) {
        size_t at = pos;
        uint64_t tag;
        int r = varint(w->buf, &pos, end, 5, &tag);
        if (r <= 0)
            return defect(w, at, "a field tag %s", r ? "longer than 5 bytes" : "cut off");
        unsigned wt = (unsigned)(tag & 7);
        uint64_t num = tag >> 3;
        if (num == 0 || num > 0x1fffffff)
            return defect(w, at, "field number %" PRIu64 " (valid: 1 to 2^29 - 1)", num);
        if (wt == 3 || wt == 4 || wt > 5)
            return defect(w, at,
                          "field %" PRIu64 " has wire type %s, which protobuf-c does not read", num,
                          wire_names[wt]);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(d, (unsigned)num);
        long idx = -1;
        if (f) {
            size_t fi = (size_t)(f - d->fields);
            uint32_t nth = fi < MAX_COUNTED ? seen[fi]++ : 0;
            if (f->label == PROTOBUF_C_LABEL_REPEATED)
                idx = (long)nth;
        }
        size_t old = path_push(w, f ? f->name : "?", idx);
        if (f && (int)wt != wire_of(f->type)) {
            bool packable = f->label == PROTOBUF_C_LABEL_REPEATED && wire_of(f->type) != 2;
            if (!(packable && wt == 2))
                return defect(w, at, "field %s (number %u) has wire type %s, not %s", f->name,
                              f->id, wire_names[wt], wire_names[wire_of(f->type)]);
        }
        uint64_t v;
        size_t vat = pos;
        if (wt == 0) {
            if ((r = varint(w->buf, &pos, end, 10, &v)) <= 0)
                return defect(w, vat, "a varint %s", r ? "longer than 10 bytes" : "cut off");
        } else if (wt == 1 || wt == 5) {
            size_t sz = wt == 1 ? 8 : 4;
            if (end - pos < sz)
                return defect(w, vat, "a %zu-byte value cut off (%zu bytes left)", sz, end - pos);
            pos += sz;
        } else {
            if ((r = varint(w->buf, &pos, end, 5, &v)) <= 0)
                return defect(w, vat, "a length %s", r ? "longer than 5 bytes" : "cut off");
            if (v > UINT32_MAX || v > end - pos)
                return defect(w, vat,
                              "a length of %" PRIu64 " bytes runs past the end of its message "
                              "(offset %zu)",
                              v, end);
            size_t vend = pos + (size_t)v;
            if (f && f->type == PROTOBUF_C_TYPE_MESSAGE &&
                message(w, f->descriptor, pos, vend, depth + 1))
                return true;
            if (f && wire_of(f->type) != 2 && packed(w, f, pos, vend))
                return true;
            pos = vend;
        }
        path_pop(w, old);
    }
    for (unsigned i = 0; i < d->n_fields && i < MAX_COUNTED; i++)
        if (d->fields[i].label == PROTOBUF_C_LABEL_REQUIRED && !seen[i])
            return defect(w, end, "message %s lacks its required field %s", d->name,
                          d->fields[i].name);
    return false;
}

bool slim__pb_explain(const ProtobufCMessageDescriptor *d, const uint8_t *buf, size_t len,
                      char *out, size_t n)
{
    char path[512] = "";
    walk w = {.buf = buf, .path = path, .path_cap = sizeof path, .out = out, .out_n = n};
    if (n)
        out[0] = '\0';
    if (!n || !buf)
        return false;
    return message(&w, d, 0, len, 0);
}
