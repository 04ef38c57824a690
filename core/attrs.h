/* core/attrs.h - attribute values checked against an op's schema. */
#ifndef SLIM_CORE_ATTRS_H
#define SLIM_CORE_ATTRS_H

#include <slim/slim.h>

/* What a builder holds per key (core/attrs_build.c). */
typedef enum { GIVEN_INTS, GIVEN_FLOATS, GIVEN_BOOL, GIVEN_STR, GIVEN_TEXT } given_kind;

typedef struct given {
    char *key;
    given_kind kind;
    int n;
    int64_t *ints;
    double *floats;
    char *str;
    bool scalar;
} given;

struct slim_attrs {
    int n, cap;
    given *items;
};

/* One attribute value, resolved against a schema entry (type exact). */
typedef struct slim__attr_value {
    slim_attr_type type;
    int n;          /* list length (1 for scalars) */
    int64_t *ints;  /* INT, BOOL (0/1), INTS */
    double *floats; /* FLOAT, FLOATS */
    char *str;      /* STRING */
} slim__attr_value;

/* The resolved attributes of one node: values[i] belongs to desc->attrs[i]. */
typedef struct slim__attr_set {
    const slim_op_desc *desc;
    slim__attr_value *values;
} slim__attr_set;

/* Check attrs (may be NULL) against desc's schema, apply defaults. Errors
 * name the attribute, what was given and what was expected. */
slim_status slim__attrs_resolve(const slim_op_desc *desc, const slim_attrs *attrs,
                                slim__attr_set *out, slim_error *err);
void slim__attrs_fini(slim__attr_set *set);
/* Check a schema itself (defaults parse, types known): at registration. */
slim_status slim__attrs_check_schema(const slim_op_desc *desc, slim_error *err);
const slim__attr_value *slim__attrs_get(const slim__attr_set *set, const char *name);

/* A set of desc's attributes that owns its values: src's values of the same
 * name and type where they pass desc's checks, desc's defaults for the rest
 * (src may be NULL). Without an error message (SLIM_ENOMEM or, when a
 * required attribute has no value, SLIM_EINVAL). */
slim_status slim__attrs_copy(const slim__attr_set *src, const slim_op_desc *desc,
                             slim__attr_set *out);
/* Set attribute name of an owned set from text (as a default is written),
 * or to the value of attribute from_name of set from (same type); checked
 * against the schema. */
slim_status slim__attrs_set_text(slim__attr_set *set, const char *name, const char *text,
                                 slim_error *err);
slim_status slim__attrs_set_from(slim__attr_set *set, const char *name, const slim__attr_set *from,
                                 const char *from_name, slim_error *err);

/* The infer ctx accessors over a slim__attr_set stored in ctx->priv's first field. */
void slim__attrs_bind(slim_infer_ctx *c);

/* Keys given in a builder (for reporting). */
int slim__attrs_count(const slim_attrs *a);
const char *slim__attrs_key(const slim_attrs *a, int i);

#endif
