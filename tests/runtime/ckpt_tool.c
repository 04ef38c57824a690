/* tests/runtime/ckpt_tool.c - checkpoint helper for the shell tests:
 *   ckpt_tool same A B      exit 0 when every tensor (parameters, optimizer
 *                           slots, moving averages) and the step are bit-identical
 *                           (A and B in any format slim reads: slim's, TensorFlow's)
 *   ckpt_tool same A B SUB  the same for the parameters whose name contains SUB only
 *   ckpt_tool close A B TOL exit 0 when the steps match and every tensor of A is in
 *                           B with max |a - b| <= TOL * max |a| (float tolerance:
 *                           the same training with another order of additions)
 *   ckpt_tool verify FILE   exit 0 when the checksums and the footer hold
 *   ckpt_tool step FILE     print the global step
 *   ckpt_tool images DIR N  write N small gray PNGs in DIR/class_K/ folders
 *                           (4 classes, a bright band per class), for convert
 *   ckpt_tool records FILE  exit 0 when FILE reads as whole TFRecords to its
 *                           end (CRCs checked); prints their count */
#include "runtime/ckpt_reader.h"

#include <slim/data.h>
#include <slim/train.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct rec {
    char *key;
    size_t len;
    uint8_t *data;
} rec;

/* Every tensor of a checkpoint of any format (runtime/ckpt_reader.h), by
 * "kind/slot/name": 0 values, 1 optimizer slots, 2 moving averages (slim's
 * own constants, global_step and bookkeeping left out). Returns the count or -1. */
static int load(const char *path, rec **out, int64_t *step)
{
    slim__ckpt *c;
    slim_error e = {0};
    if (slim__ckpt_open(path, &c, &e)) {
        fprintf(stderr, "%s\n", e.msg);
        return -1;
    }
    *step = slim__ckpt_global_step(c);
    int n = 0;
    rec *recs = calloc((size_t)slim__ckpt_count(c) + 1, sizeof *recs);
    for (int i = 0; recs && i < slim__ckpt_count(c); i++) {
        const slim__ckpt_entry *t = slim__ckpt_at(c, i);
        int kind = t->kind == SLIM__CK_VALUE ? 0 : t->kind == SLIM__CK_SLOT ? 1 : 2;
        const char *name = t->var ? t->var : t->name;
        if ((t->kind != SLIM__CK_VALUE && t->kind != SLIM__CK_SLOT && t->kind != SLIM__CK_EMA) ||
            !strncmp(name, "slim_const/", 11))
            continue;
        size_t kl = strlen(t->name) + 128;
        recs[n].key = malloc(kl);
        snprintf(recs[n].key, kl, "%d/%s/%s", kind, kind == 1 ? t->slot : "", name);
        void *data;
        if (slim__ckpt_read_raw(c, i, &data, &recs[n].len, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            free(recs[n].key);
            break;
        }
        recs[n].data = data;
        n++;
    }
    slim__ckpt_close(c);
    *out = recs;
    return n;
}

static void free_recs(rec *r, int n)
{
    for (int i = 0; i < n; i++) {
        free(r[i].key);
        free(r[i].data);
    }
    free(r);
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "verify")) {
        slim_checkpoint_info info;
        slim_error e = {0};
        if (slim_checkpoint_verify(argv[2], &info, &e)) {
            printf("%s\n", e.msg);
            return 1;
        }
        printf("ok: step %lld, %d tensors\n", (long long)info.global_step, info.n_tensors);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "step")) {
        slim_checkpoint_info info;
        slim_error e = {0};
        if (slim_checkpoint_verify(argv[2], &info, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        printf("%lld\n", (long long)info.global_step);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "same")) {
        rec *a, *b;
        int64_t sa, sb;
        int na = load(argv[2], &a, &sa), nb = load(argv[3], &b, &sb), compared = 0, bad = 0;
        if (na < 0 || nb < 0) {
            if (na >= 0)
                free_recs(a, na);
            if (nb >= 0)
                free_recs(b, nb);
            return 2;
        }
        for (int i = 0; i < na; i++) {
            if (strncmp(a[i].key, "0//", 3) != 0 || !strstr(a[i].key + 3, argv[4]))
                continue;
            int j = 0;
            while (j < nb && strcmp(a[i].key, b[j].key))
                j++;
            compared++;
            if (j == nb || a[i].len != b[j].len || memcmp(a[i].data, b[j].data, a[i].len)) {
                printf("differs: %s\n", a[i].key + 3);
                bad++;
            }
        }
        printf("%s: %d parameters matching '%s' compared, %d differ\n",
               bad || !compared ? "DIFFERENT" : "identical", compared, argv[4], bad);
        free_recs(a, na);
        free_recs(b, nb);
        return bad || !compared ? 1 : 0;
    }
    if (argc == 5 && !strcmp(argv[1], "close")) {
        rec *a, *b;
        int64_t sa = -1, sb = -2;
        int na = load(argv[2], &a, &sa), nb = load(argv[3], &b, &sb), bad = 0;
        double tol = atof(argv[4]), worst = 0;
        const char *worst_key = "";
        if (na < 0 || nb < 0) {
            if (na >= 0)
                free_recs(a, na);
            if (nb >= 0)
                free_recs(b, nb);
            return 2;
        }
        if (sa != sb) {
            printf("steps differ: %lld vs %lld\n", (long long)sa, (long long)sb);
            bad++;
        }
        for (int i = 0; i < na; i++) {
            int j = 0;
            while (j < nb && strcmp(a[i].key, b[j].key))
                j++;
            if (j == nb || a[i].len != b[j].len) {
                printf("missing or resized in B: %s\n", a[i].key);
                bad++;
                continue;
            }
            const float *x = (const float *)a[i].data, *y = (const float *)b[j].data;
            double dmax = 0, amax = 0;
            for (size_t k = 0; k < a[i].len / sizeof(float); k++) {
                float xk, yk;
                memcpy(&xk, x + k, sizeof xk);
                memcpy(&yk, y + k, sizeof yk);
                double d = xk > yk ? (double)xk - yk : (double)yk - xk;
                dmax = d > dmax ? d : dmax;
                amax = xk > amax ? xk : -xk > amax ? -xk : amax;
            }
            double rel = amax > 0 ? dmax / amax : dmax;
            if (!(rel <= tol)) {
                printf("differs: %s (max |a-b| %.3g, max |a| %.3g)\n", a[i].key, dmax, amax);
                bad++;
            }
            if (rel > worst)
                worst = rel, worst_key = a[i].key;
        }
        printf("%s: %d tensors compared, %d beyond %g; the largest relative difference %.3g (%s)\n",
               bad ? "DIFFERENT" : "close", na, bad, tol, worst, worst_key);
        free_recs(a, na);
        free_recs(b, nb);
        return bad ? 1 : 0;
    }
    if (argc == 4 && !strcmp(argv[1], "same")) {
        rec *a, *b;
        int64_t sa = -1, sb = -2;
        int na = load(argv[2], &a, &sa), nb = load(argv[3], &b, &sb);
        if (na < 0 || nb < 0) {
            if (na >= 0)
                free_recs(a, na);
            if (nb >= 0)
                free_recs(b, nb);
            return 2;
        }
        int bad = 0;
        if (sa != sb) {
            printf("steps differ: %lld vs %lld\n", (long long)sa, (long long)sb);
            bad++;
        }
        if (na != nb) {
            printf("tensor counts differ: %d vs %d\n", na, nb);
            bad++;
        }
        for (int i = 0; i < na && i < nb; i++) {
            if (strcmp(a[i].key, b[i].key) || a[i].len != b[i].len ||
                memcmp(a[i].data, b[i].data, a[i].len)) {
                if (bad < 10)
                    printf("differs: %s\n", a[i].key);
                bad++;
            }
        }
        printf("%s: %d tensors compared, %d differ\n", bad ? "DIFFERENT" : "identical", na, bad);
        free_recs(a, na);
        free_recs(b, nb);
        return bad ? 1 : 0;
    }
    if (argc == 4 && !strcmp(argv[1], "images")) {
        int n = atoi(argv[3]);
        mkdir(argv[2], 0777);
        for (int i = 0; i < n; i++) {
            int k = i % 4;
            char path[1200];
            snprintf(path, sizeof path, "%s/class_%d", argv[2], k);
            mkdir(path, 0777);
            snprintf(path, sizeof path, "%s/class_%d/img_%03d.png", argv[2], k, i);
            uint8_t px[16 * 16];
            slim_image img = {.height = 16, .width = 16, .channels = 1, .data = px};
            for (int r = 0; r < 16; r++)
                for (int c = 0; c < 16; c++)
                    px[r * 16 + c] =
                        (uint8_t)((r / 4 == k ? 160 : 0) + ((i * 37 + r * 11 + c * 7) % 64));
            slim_error e = {0};
            if (slim_image_write_png(path, &img, &e)) {
                fprintf(stderr, "%s\n", e.msg);
                return 1;
            }
        }
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "records")) {
        slim_tfrecord_reader *r;
        slim_error e = {0};
        if (slim_tfrecord_open(argv[2], SLIM_COMPRESSION_NONE, true, &r, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        const uint8_t *d;
        size_t len;
        int64_t off;
        long n = 0;
        slim_status st;
        while (!(st = slim_tfrecord_next(r, &d, &len, &off, &e)) && d)
            n++;
        slim_tfrecord_close(r);
        if (st) {
            fprintf(stderr, "%s\n", e.msg);
            return 1;
        }
        printf("%ld records\n", n);
        return 0;
    }
    fprintf(stderr, "usage: ckpt_tool same A B | verify FILE | step FILE | images DIR N | "
                    "records FILE\n");
    return 2;
}
