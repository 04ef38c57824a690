/*
 * dsl/expr.c - the small expression language over values (value.c).
 *
 *   depth: $base_depth * 4                    a whole scalar "$..." is an expression
 *   name: "unit_${index}"                     "${...}" inside text is interpolated
 *   stride: $index == num_units ? stride : 1
 *   num_outputs: $max(int(64 * depth_multiplier), min_depth)
 *
 * Grammar, lowest precedence first:
 *   expr := or ['?' expr ':' expr]
 *   or   := and {('or' | '||') and}          and := not {('and' | '&&') not}
 *   not  := ('not' | '!') not | cmp           cmp := sum [('=='|'!='|'<'|'<='|'>'|'>=') sum]
 *   sum  := prod {('+'|'-') prod}             prod := unary {('*'|'/'|'//'|'%') unary}
 *   unary := '-' unary | postfix              postfix := primary {'[' expr ']'}
 *   primary := number | 'text' | "text" | true | false | null | name | name '(' args ')'
 *            | '(' expr ')' | '[' [expr {',' expr}] ']'
 * Integers stay integers (64-bit, overflow is an error) except under '/'.
 */
#include "dsl/dsl.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the expression parser ---------------------------------------------------- */

typedef struct xp {
    dsl_eval_ctx *c;
    const env *e;
    const dnode *at;
    int col0; /* column of text[0] relative to at->col, or -1 when unknown */
    const char *text;
    const char *p;
    int depth;
} xp;

#define MAX_EXPR_DEPTH 64

static slim_status xfail(xp *x, const char *where, slim_status code, const char *fmt, ...)
    SLIM_PRINTF(4, 5);
static slim_status xfail(xp *x, const char *where, slim_status code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int off = x->col0 >= 0 && where ? x->col0 + (int)(where - x->text) : 0;
    slim_status st = dsl_vfail(x->c->err, x->at, off, code, fmt, ap);
    va_end(ap);
    return st;
}

static void skip_ws(xp *x)
{
    while (*x->p == ' ' || *x->p == '\t' || *x->p == '\n' || *x->p == '\r')
        x->p++;
}

static bool accept(xp *x, const char *tok)
{
    skip_ws(x);
    size_t l = strlen(tok);
    if (strncmp(x->p, tok, l) != 0)
        return false;
    /* words must end at a word boundary; '/' must not start '//' etc. */
    if (isalpha((unsigned char)tok[0]) && (isalnum((unsigned char)x->p[l]) || x->p[l] == '_'))
        return false;
    x->p += l;
    return true;
}

static slim_status parse_expr(xp *x, dval *out);

static const char *tok_desc(xp *x, char *buf, size_t n)
{
    skip_ws(x);
    if (!*x->p)
        return "the end of the expression";
    snprintf(buf, n, "'%.*s'", (int)strcspn(x->p, " \t") > 12 ? 12 : (int)strcspn(x->p, " \t"),
             x->p);
    return buf;
}

static slim_status expect_tok(xp *x, const char *tok)
{
    if (accept(x, tok))
        return SLIM_OK;
    char b[32];
    if (!*x->p && (tok[0] == ')' || tok[0] == ']'))
        return xfail(x, x->p, SLIM_EPARSE,
                     "found the end of the expression, expected '%s' (inside [...] or {...} YAML "
                     "splits at commas: quote an expression that has them, '$max(a, b)')",
                     tok);
    return xfail(x, x->p, SLIM_EPARSE, "found %s in an expression, expected '%s'",
                 tok_desc(x, b, sizeof b), tok);
}

static slim_status num_op(xp *x, const char *where, char op, dval *a, const dval *b)
{
    if (op == '+' && a->kind == DV_STR && b->kind == DV_STR) {
        char *s = dsl_printf(x->c->arena, "%s%s", a->s, b->s);
        if (!s)
            return xfail(x, where, SLIM_ENOMEM, "out of memory");
        a->s = s;
        return SLIM_OK;
    }
    if (!dval_is_number(a) || !dval_is_number(b))
        return xfail(x, where, SLIM_ETYPE, "found %s %c %s, expected numbers on both sides of '%c'",
                     dval_kind_str(a), op, dval_kind_str(b), op);
    if (a->kind == DV_INT && b->kind == DV_INT && op != '/') {
        int64_t r, u = a->i, v = b->i;
        bool ovf = false;
        switch (op) {
        case '+': ovf = __builtin_add_overflow(u, v, &r); break;
        case '-': ovf = __builtin_sub_overflow(u, v, &r); break;
        case '*': ovf = __builtin_mul_overflow(u, v, &r); break;
        case 'f': /* floor division */
        case '%':
            if (v == 0)
                return xfail(x, where, SLIM_EINVAL, "division by zero");
            if (u == INT64_MIN && v == -1) {
                ovf = true;
                break;
            }
            r = op == 'f' ? u / v : u % v;
            if ((u % v != 0) && ((u < 0) != (v < 0)))
                r = op == 'f' ? r - 1 : r + v; /* Python's floor semantics */
            break;
        default: r = 0;
        }
        if (ovf)
            return xfail(x, where, SLIM_EINVAL, "integer overflow in an expression");
        a->i = r;
        return SLIM_OK;
    }
    double u = dval_num(a), v = dval_num(b), r = 0;
    switch (op) {
    case '+': r = u + v; break;
    case '-': r = u - v; break;
    case '*': r = u * v; break;
    case '/':
        if (v == 0)
            return xfail(x, where, SLIM_EINVAL, "division by zero");
        r = u / v;
        break;
    case 'f':
        if (v == 0)
            return xfail(x, where, SLIM_EINVAL, "division by zero");
        r = floor(u / v);
        break;
    case '%':
        if (v == 0)
            return xfail(x, where, SLIM_EINVAL, "division by zero");
        r = u - v * floor(u / v);
        break;
    }
    if (!isfinite(r))
        return xfail(x, where, SLIM_EINVAL, "the result is not a finite number");
    a->kind = DV_FLOAT;
    a->f = r;
    return SLIM_OK;
}

static bool truthy(const dval *v)
{
    switch (v->kind) {
    case DV_NULL: return false;
    case DV_BOOL: return v->b;
    case DV_INT: return v->i != 0;
    case DV_FLOAT: return v->f != 0;
    case DV_STR: return v->s[0] != 0;
    case DV_LIST: return v->n != 0;
    case DV_MAP:
    case DV_FUNC: return true;
    }
    return false;
}

static bool vequal(const dval *a, const dval *b)
{
    if (dval_is_number(a) && dval_is_number(b))
        return a->kind == DV_INT && b->kind == DV_INT ? a->i == b->i : dval_num(a) == dval_num(b);
    if (a->kind != b->kind)
        return false;
    switch (a->kind) {
    case DV_NULL: return true;
    case DV_BOOL: return a->b == b->b;
    case DV_STR: return strcmp(a->s, b->s) == 0;
    case DV_LIST:
        if (a->n != b->n)
            return false;
        for (int i = 0; i < a->n; i++)
            if (!vequal(&a->items[i], &b->items[i]))
                return false;
        return true;
    default: return false;
    }
}

static slim_status to_int(xp *x, const char *where, double f, dval *out)
{
    if (!(f > -9.2e18 && f < 9.2e18))
        return xfail(x, where, SLIM_EINVAL, "%g is too large for an integer", f);
    out->kind = DV_INT;
    out->i = (int64_t)f;
    return SLIM_OK;
}

static slim_status eval_text(dsl_eval_ctx *c, const env *e, const dnode *at, const char *text,
                             int col0, dval *out);

/* A function of functions: with its parameters bound, over the model's variables. */
static slim_status call_user(xp *x, const char *where, const char *fn, const dval *f, dval *args,
                             int n, dval *out)
{
    if (n != f->n)
        return xfail(x, where, SLIM_EINVAL, "%s() takes %d argument%s, found %d", fn, f->n,
                     f->n == 1 ? "" : "s", n);
    if (x->c->depth > MAX_EXPR_DEPTH)
        return xfail(x, where, SLIM_EINVAL, "functions call each other too deep (is %s recursive?)",
                     fn);
    const env *root = x->e;
    while (root && root->parent)
        root = root->parent;
    env *fe = env_new(x->c->arena, root);
    if (!fe)
        return xfail(x, where, SLIM_ENOMEM, "out of memory");
    for (int i = 0; i < n; i++)
        TRY(env_set(x->c->arena, fe, f->items[i].s, &args[i], x->c->err));
    x->c->depth++;
    slim_status st = eval_text(x->c, fe, f->at, f->s, -1, out);
    x->c->depth--;
    return st;
}

static slim_status call(xp *x, const char *where, const char *fn, dval *args, int n, dval *out)
{
    memset(out, 0, sizeof *out);
    out->at = x->at;
    const dval *uf = env_get(x->e, fn);
    if (uf && uf->kind == DV_FUNC)
        return call_user(x, where, fn, uf, args, n, out);
    for (int i = 0; i < n; i++)
        if (strcmp(fn, "len") != 0 && !dval_is_number(&args[i]))
            return xfail(x, where, SLIM_ETYPE, "%s() takes numbers, found %s", fn,
                         dval_kind_str(&args[i]));
#define ARITY(lo, hi)                                                                              \
    if (n < (lo) || n > (hi))                                                                      \
    return xfail(x, where, SLIM_EINVAL, "%s() takes %d to %d arguments, found %d", fn, lo, hi, n)
    if (!strcmp(fn, "int")) {
        ARITY(1, 1);
        return args[0].kind == DV_INT ? (*out = args[0], SLIM_OK)
                                      : to_int(x, where, trunc(args[0].f), out);
    }
    if (!strcmp(fn, "float")) {
        ARITY(1, 1);
        out->kind = DV_FLOAT;
        out->f = dval_num(&args[0]);
        return SLIM_OK;
    }
    if (!strcmp(fn, "round") || !strcmp(fn, "floor") || !strcmp(fn, "ceil")) {
        ARITY(1, 1);
        if (args[0].kind == DV_INT) {
            *out = args[0];
            return SLIM_OK;
        }
        double f = args[0].f;
        /* round: half to even, as Python 3 */
        double r = !strcmp(fn, "floor") ? floor(f) : !strcmp(fn, "ceil") ? ceil(f) : nearbyint(f);
        return to_int(x, where, r, out);
    }
    if (!strcmp(fn, "abs")) {
        ARITY(1, 1);
        *out = args[0];
        if (out->kind == DV_INT) {
            if (out->i == INT64_MIN)
                return xfail(x, where, SLIM_EINVAL, "integer overflow in an expression");
            out->i = out->i < 0 ? -out->i : out->i;
        } else {
            out->f = fabs(out->f);
        }
        return SLIM_OK;
    }
    if (!strcmp(fn, "max") || !strcmp(fn, "min")) {
        ARITY(1, 64);
        bool mx = fn[1] == 'a';
        *out = args[0];
        for (int i = 1; i < n; i++) {
            double a = dval_num(out), b = dval_num(&args[i]);
            if (mx ? b > a : b < a)
                *out = args[i];
        }
        return SLIM_OK;
    }
    if (!strcmp(fn, "make_divisible")) {
        /* MobileNet's _make_divisible(v, divisor, min_value=None): round to the
         * nearest multiple of divisor, never below min_value nor 10% below v. */
        ARITY(2, 3);
        double v = dval_num(&args[0]), d = dval_num(&args[1]);
        double mn = n > 2 ? dval_num(&args[2]) : d;
        if (d <= 0)
            return xfail(x, where, SLIM_EINVAL, "make_divisible(): the divisor must be positive");
        if (!(fabs(v) < 1e15) || !(fabs(mn) < 1e15) || !(d < 1e15))
            return xfail(x, where, SLIM_EINVAL, "make_divisible(): arguments out of range");
        double nv = floor(trunc(v + d / 2) / d) * d;
        if (nv < mn)
            nv = mn;
        if (nv < 0.9 * v)
            nv += d;
        return to_int(x, where, nv, out);
    }
    if (!strcmp(fn, "len")) {
        ARITY(1, 1);
        if (args[0].kind != DV_LIST && args[0].kind != DV_STR)
            return xfail(x, where, SLIM_ETYPE, "len() takes a list or text, found %s",
                         dval_kind_str(&args[0]));
        out->kind = DV_INT;
        out->i = args[0].kind == DV_LIST ? args[0].n : (int64_t)strlen(args[0].s);
        return SLIM_OK;
    }
#undef ARITY
    return xfail(x, where, SLIM_ENOTFOUND,
                 "unknown function '%s', expected one of int, float, round, floor, ceil, abs, "
                 "min, max, make_divisible, len, or one of functions:",
                 fn);
}

static slim_status parse_primary(xp *x, dval *out)
{
    skip_ws(x);
    memset(out, 0, sizeof *out);
    out->at = x->at;
    const char *start = x->p;
    char b[32];
    if (accept(x, "(")) {
        TRY(parse_expr(x, out));
        return expect_tok(x, ")");
    }
    if (accept(x, "[")) {
        dval items[64];
        int n = 0;
        skip_ws(x);
        if (!accept(x, "]")) {
            do {
                if (n == 64)
                    return xfail(x, x->p, SLIM_EINVAL,
                                 "a list in an expression holds at most 64 items");
                TRY(parse_expr(x, &items[n]));
                n++;
            } while (accept(x, ","));
            TRY(expect_tok(x, "]"));
        }
        out->kind = DV_LIST;
        out->n = n;
        out->items = dsl_alloc(x->c->arena, (size_t)(n ? n : 1) * sizeof *out->items);
        if (!out->items)
            return xfail(x, start, SLIM_ENOMEM, "out of memory");
        memcpy(out->items, items, (size_t)n * sizeof *items);
        return SLIM_OK;
    }
    if (*x->p == '\'' || *x->p == '"') {
        char q = *x->p++;
        const char *s = x->p;
        while (*x->p && *x->p != q)
            x->p++;
        if (!*x->p)
            return xfail(x, start, SLIM_EPARSE,
                         "found an unterminated string, expected a closing %c", q);
        out->kind = DV_STR;
        out->s = dsl_strndup(x->c->arena, s, (size_t)(x->p - s));
        x->p++;
        return out->s ? SLIM_OK : xfail(x, start, SLIM_ENOMEM, "out of memory");
    }
    if (isdigit((unsigned char)*x->p) || (*x->p == '.' && isdigit((unsigned char)x->p[1]))) {
        const char *s = x->p;
        while (isalnum((unsigned char)*x->p) || *x->p == '.' ||
               ((*x->p == '-' || *x->p == '+') && (x->p[-1] == 'e' || x->p[-1] == 'E')))
            x->p++;
        char num[64];
        size_t l = (size_t)(x->p - s);
        if (l >= sizeof num)
            return xfail(x, s, SLIM_EPARSE,
                         "found a number too long, expected at most 63 characters");
        memcpy(num, s, l);
        num[l] = 0;
        bool ovf = false;
        if (dsl_parse_int(num, &out->i, &ovf)) {
            if (ovf)
                return xfail(x, s, SLIM_EINVAL, "found %s, expected an integer within 64 bits",
                             num);
            out->kind = DV_INT;
            return SLIM_OK;
        }
        if (dsl_parse_float(num, &out->f)) {
            out->kind = DV_FLOAT;
            return SLIM_OK;
        }
        return xfail(x, s, SLIM_EPARSE, "found '%s', expected a number", num);
    }
    if (isalpha((unsigned char)*x->p) || *x->p == '_') {
        const char *s = x->p;
        while (isalnum((unsigned char)*x->p) || *x->p == '_')
            x->p++;
        char name[128];
        size_t l = (size_t)(x->p - s);
        if (l >= sizeof name)
            return xfail(x, s, SLIM_EPARSE,
                         "found a name too long, expected at most 127 characters");
        memcpy(name, s, l);
        name[l] = 0;
        if (!strcmp(name, "true") || !strcmp(name, "false")) {
            out->kind = DV_BOOL;
            out->b = name[0] == 't';
            return SLIM_OK;
        }
        if (!strcmp(name, "null"))
            return SLIM_OK;
        if (accept(x, "(")) {
            dval args[64];
            int n = 0;
            if (!accept(x, ")")) {
                do {
                    if (n == 64)
                        return xfail(x, x->p, SLIM_EINVAL, "too many arguments to %s()", name);
                    TRY(parse_expr(x, &args[n]));
                    n++;
                } while (accept(x, ","));
                TRY(expect_tok(x, ")"));
            }
            return call(x, s, name, args, n, out);
        }
        const dval *v = env_get(x->e, name);
        if (!v) {
            /* list what is visible, nearest scope first */
            const char *cands[64];
            int nc = 0;
            for (const env *e = x->e; e && nc < 64; e = e->parent)
                for (int i = 0; i < e->n && nc < 64; i++)
                    cands[nc++] = e->vars[i].name;
            const char *sug = dsl_suggest(name, cands, nc);
            if (sug)
                return xfail(x, s, SLIM_ENOTFOUND,
                             "undefined variable '%s' in an expression, did you mean '%s'?", name,
                             sug);
            return xfail(x, s, SLIM_ENOTFOUND,
                         "undefined variable '%s' in an expression, expected a block parameter, a "
                         "var: or a built-in (num_classes, image_size, index, in_channels ...)",
                         name);
        }
        *out = *v;
        return SLIM_OK;
    }
    if (!*x->p)
        return xfail(x, x->p, SLIM_EPARSE, "found the end of the expression, expected a value");
    return xfail(x, x->p, SLIM_EPARSE, "found %s in an expression, expected a value",
                 tok_desc(x, b, sizeof b));
}

static slim_status parse_postfix(xp *x, dval *out)
{
    TRY(parse_primary(x, out));
    while (accept(x, "[")) {
        const char *w = x->p;
        dval idx;
        TRY(parse_expr(x, &idx));
        TRY(expect_tok(x, "]"));
        if (out->kind != DV_LIST)
            return xfail(x, w, SLIM_ETYPE, "found %s indexed with [], expected a list",
                         dval_kind_str(out));
        if (idx.kind != DV_INT)
            return xfail(x, w, SLIM_ETYPE, "found %s as a list index, expected an integer",
                         dval_kind_str(&idx));
        int64_t i = idx.i < 0 ? idx.i + out->n : idx.i;
        if (i < 0 || i >= out->n)
            return xfail(x, w, SLIM_EINVAL, "index %lld is out of range for a list of %d",
                         (long long)idx.i, out->n);
        *out = out->items[i];
    }
    return SLIM_OK;
}

static slim_status parse_unary(xp *x, dval *out)
{
    skip_ws(x);
    const char *w = x->p;
    if (accept(x, "-")) {
        if (++x->depth > MAX_EXPR_DEPTH)
            return xfail(x, w, SLIM_EINVAL, "the expression nests too deep");
        TRY(parse_unary(x, out));
        x->depth--;
        if (out->kind == DV_INT) {
            if (out->i == INT64_MIN)
                return xfail(x, w, SLIM_EINVAL, "integer overflow in an expression");
            out->i = -out->i;
        } else if (out->kind == DV_FLOAT) {
            out->f = -out->f;
        } else {
            return xfail(x, w, SLIM_ETYPE, "found - %s, expected a number", dval_kind_str(out));
        }
        return SLIM_OK;
    }
    return parse_postfix(x, out);
}

static slim_status parse_prod(xp *x, dval *out)
{
    TRY(parse_unary(x, out));
    for (;;) {
        skip_ws(x);
        const char *w = x->p;
        char op;
        if (accept(x, "//"))
            op = 'f';
        else if (accept(x, "*"))
            op = '*';
        else if (accept(x, "/"))
            op = '/';
        else if (accept(x, "%"))
            op = '%';
        else
            return SLIM_OK;
        dval b;
        TRY(parse_unary(x, &b));
        TRY(num_op(x, w, op, out, &b));
    }
}

static slim_status parse_sum(xp *x, dval *out)
{
    TRY(parse_prod(x, out));
    for (;;) {
        skip_ws(x);
        const char *w = x->p;
        char op;
        if (accept(x, "+"))
            op = '+';
        else if (accept(x, "-"))
            op = '-';
        else
            return SLIM_OK;
        dval b;
        TRY(parse_prod(x, &b));
        TRY(num_op(x, w, op, out, &b));
    }
}

static slim_status parse_cmp(xp *x, dval *out)
{
    TRY(parse_sum(x, out));
    skip_ws(x);
    const char *w = x->p;
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (int k = 0; k < 6; k++) {
        if (!accept(x, ops[k]))
            continue;
        dval b;
        TRY(parse_sum(x, &b));
        bool r;
        if (k < 2) {
            r = vequal(out, &b) == (k == 0);
        } else {
            if (!dval_is_number(out) || !dval_is_number(&b))
                return xfail(x, w, SLIM_ETYPE, "found %s %s %s, expected numbers",
                             dval_kind_str(out), ops[k], dval_kind_str(&b));
            double u = dval_num(out), v = dval_num(&b);
            r = k == 2 ? u <= v : k == 3 ? u >= v : k == 4 ? u < v : u > v;
        }
        memset(out, 0, sizeof *out);
        out->kind = DV_BOOL;
        out->b = r;
        out->at = x->at;
        return SLIM_OK;
    }
    return SLIM_OK;
}

static slim_status parse_not(xp *x, dval *out)
{
    skip_ws(x);
    const char *w = x->p;
    if (accept(x, "not") || (x->p[0] == '!' && x->p[1] != '=' && accept(x, "!"))) {
        if (++x->depth > MAX_EXPR_DEPTH)
            return xfail(x, w, SLIM_EINVAL, "the expression nests too deep");
        TRY(parse_not(x, out));
        x->depth--;
        bool r = !truthy(out);
        memset(out, 0, sizeof *out);
        out->kind = DV_BOOL;
        out->b = r;
        return SLIM_OK;
    }
    return parse_cmp(x, out);
}

static slim_status parse_and(xp *x, dval *out)
{
    TRY(parse_not(x, out));
    while (accept(x, "and") || accept(x, "&&")) {
        dval b;
        TRY(parse_not(x, &b));
        bool r = truthy(out) && truthy(&b);
        memset(out, 0, sizeof *out);
        out->kind = DV_BOOL;
        out->b = r;
    }
    return SLIM_OK;
}

static slim_status parse_or(xp *x, dval *out)
{
    TRY(parse_and(x, out));
    while (accept(x, "or") || accept(x, "||")) {
        dval b;
        TRY(parse_and(x, &b));
        bool r = truthy(out) || truthy(&b);
        memset(out, 0, sizeof *out);
        out->kind = DV_BOOL;
        out->b = r;
    }
    return SLIM_OK;
}

static slim_status parse_expr(xp *x, dval *out)
{
    if (++x->depth > MAX_EXPR_DEPTH)
        return xfail(x, x->p, SLIM_EINVAL, "the expression nests too deep");
    TRY(parse_or(x, out));
    if (accept(x, "?")) {
        dval a, b;
        TRY(parse_expr(x, &a));
        TRY(expect_tok(x, ":"));
        TRY(parse_expr(x, &b));
        *out = truthy(out) ? a : b;
    }
    x->depth--;
    return SLIM_OK;
}

/* Evaluate text (an expression) at node at; col0: its column offset. */
static slim_status eval_text(dsl_eval_ctx *c, const env *e, const dnode *at, const char *text,
                             int col0, dval *out)
{
    xp x = {.c = c, .e = e, .at = at, .col0 = col0, .text = text, .p = text};
    skip_ws(&x);
    if (!*x.p)
        return xfail(&x, x.p, SLIM_EPARSE, "found an empty expression, expected a value after $");
    TRY(parse_expr(&x, out));
    skip_ws(&x);
    if (*x.p) {
        char b[32];
        return xfail(&x, x.p, SLIM_EPARSE, "found %s after the expression, expected its end",
                     tok_desc(&x, b, sizeof b));
    }
    out->at = at;
    return SLIM_OK;
}

/* "${...}" pieces of a string replaced by their values. */
static slim_status interpolate(dsl_eval_ctx *c, const env *e, const dnode *at, const char *s,
                               int col0, dval *out)
{
    size_t cap = strlen(s) + 64, used = 0;
    char *buf = malloc(cap);
    if (!buf)
        return dsl_fail(c->err, at, SLIM_ENOMEM, "out of memory");
    const char *p = s;
    slim_status st = SLIM_OK;
    while (*p && st == SLIM_OK) {
        const char *open = strstr(p, "${");
        size_t lit = open ? (size_t)(open - p) : strlen(p);
        char *piece = NULL;
        if (open) {
            /* the closing brace, skipping quoted text inside */
            const char *q = open + 2;
            char quote = 0;
            while (*q && (quote || *q != '}')) {
                if (quote && *q == quote)
                    quote = 0;
                else if (!quote && (*q == '\'' || *q == '"'))
                    quote = *q;
                q++;
            }
            if (!*q) {
                xp x = {.c = c, .at = at, .col0 = col0, .text = s};
                st = xfail(&x, open, SLIM_EPARSE,
                           "found '${' without its '}', expected ${expression}");
                break;
            }
            char *inner = dsl_strndup(c->arena, open + 2, (size_t)(q - open - 2));
            dval v;
            if (!inner)
                st = dsl_fail(c->err, at, SLIM_ENOMEM, "out of memory");
            else
                st = eval_text(c, e, at, inner, col0 >= 0 ? col0 + (int)(open + 2 - s) : -1, &v);
            if (st == SLIM_OK)
                piece = (char *)dval_str(c->arena, &v);
            p = q + 1;
        } else {
            p += lit;
        }
        size_t need = used + lit + (piece ? strlen(piece) : 0) + 1;
        if (need > cap) {
            cap = 2 * need;
            char *nb = realloc(buf, cap);
            if (!nb) {
                st = dsl_fail(c->err, at, SLIM_ENOMEM, "out of memory");
                break;
            }
            buf = nb;
        }
        memcpy(buf + used, open ? open - lit : p - lit, lit);
        used += lit;
        if (piece) {
            memcpy(buf + used, piece, strlen(piece));
            used += strlen(piece);
        }
        buf[used] = 0;
    }
    if (st == SLIM_OK) {
        buf[used] = 0;
        memset(out, 0, sizeof *out);
        out->kind = DV_STR;
        out->s = dsl_strndup(c->arena, buf, used);
        out->at = at;
        if (!out->s)
            st = dsl_fail(c->err, at, SLIM_ENOMEM, "out of memory");
    }
    free(buf);
    return st;
}

slim_status dsl_resolve(dsl_eval_ctx *c, const env *e, const dnode *n, dval *out)
{
    memset(out, 0, sizeof *out);
    out->at = n;
    if (!n)
        return SLIM_OK;
    if (++c->depth > MAX_EXPR_DEPTH) {
        c->depth--;
        return dsl_fail(c->err, n, SLIM_EINVAL, "values nested too deep");
    }
    slim_status st = SLIM_OK;
    switch (n->kind) {
    case DN_SCALAR: {
        int col0 = n->plain_multiline ? -1 : n->quoted ? 1 : 0;
        if (n->str[0] == '$' && n->str[1] != '{') {
            st = eval_text(c, e, n, n->str + 1, col0 >= 0 ? col0 + 1 : -1, out);
        } else if (strstr(n->str, "${")) {
            /* a whole "${expr}" keeps the value's type */
            size_t l = strlen(n->str);
            if (n->str[0] == '$' && n->str[l - 1] == '}' && !strstr(n->str + 2, "${") &&
                !strchr(n->str + 2, '}')[1]) {
                char *inner = dsl_strndup(c->arena, n->str + 2, l - 3);
                st = inner ? eval_text(c, e, n, inner, col0 >= 0 ? col0 + 2 : -1, out)
                           : dsl_fail(c->err, n, SLIM_ENOMEM, "out of memory");
            } else {
                st = interpolate(c, e, n, n->str, col0, out);
            }
        } else {
            dsl_scalar_value(n->str, n->quoted, out);
            out->at = n;
        }
        break;
    }
    case DN_SEQ:
        out->kind = DV_LIST;
        out->n = n->n;
        out->items = dsl_alloc(c->arena, (size_t)(n->n ? n->n : 1) * sizeof *out->items);
        if (!out->items) {
            st = dsl_fail(c->err, n, SLIM_ENOMEM, "out of memory");
            break;
        }
        for (int i = 0; i < n->n && st == SLIM_OK; i++)
            st = dsl_resolve(c, e, n->items[i], &out->items[i]);
        break;
    case DN_MAP:
        out->kind = DV_MAP;
        out->map = n;
        break;
    }
    c->depth--;
    return st;
}
