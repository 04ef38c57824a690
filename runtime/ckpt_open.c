/* runtime/ckpt_open.c - finding a checkpoint and opening it with the back
 * end of its format (ckpt_reader.h): a file (sniffed: slim's TFRecords or
 * TensorFlow's table), a V2 prefix or one of its files, a sharded V1 prefix,
 * or a directory (its newest valid checkpoint, or what TensorFlow's
 * `checkpoint` state file names). */
#include "runtime/checkpoint.h"
#include "runtime/ckpt_reader.h"

#include "core/error.h"
#include "interop/tf_checkpoint.h"
#include "interop/tf_table.h"

#include <slim/data.h>
#include <slim/train.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_file(const char *p)
{
    struct stat sb;
    return stat(p, &sb) == 0 && S_ISREG(sb.st_mode);
}

static bool ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

/* NAME.data-00000-of-00001 -> NAME (len), or 0. */
static size_t data_file_prefix(const char *p)
{
    const char *d = strstr(p, ".data-");
    while (d) {
        const char *q = d + 6;
        int digits = 0;
        while (isdigit((unsigned char)*q))
            q++, digits++;
        if (digits && !strncmp(q, "-of-", 4)) {
            q += 4;
            int d2 = 0;
            while (isdigit((unsigned char)*q))
                q++, d2++;
            if (d2 && !*q)
                return (size_t)(d - p);
        }
        d = strstr(d + 1, ".data-");
    }
    return 0;
}

typedef enum sniffed { NOT_CKPT, IS_SLIM, IS_TABLE } sniffed;

static sniffed sniff(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NOT_CKPT;
    sniffed r = NOT_CKPT;
    uint8_t h[12];
    struct stat sb;
    if (fstat(fd, &sb) == 0 && pread(fd, h, 12, 0) == 12) {
        uint32_t want;
        memcpy(&want, h + 8, 4);
        if (slim_crc32c_mask(slim_crc32c(0, h, 8)) == want)
            r = IS_SLIM; /* a TFRecord: slim's format is the only one of those */
    }
    if (r == NOT_CKPT && sb.st_size >= 48 && pread(fd, h, 8, sb.st_size - 8) == 8) {
        uint64_t m = 0;
        for (int i = 7; i >= 0; i--)
            m = m << 8 | h[i];
        if (m == 0xdb4775248b80fb57ull)
            r = IS_TABLE;
    }
    close(fd);
    return r;
}

static slim_status open_file(const char *path, slim__ckpt **out, slim_error *err)
{
    *out = NULL;
    char prefix[1200];
    size_t dl = data_file_prefix(path);
    bool v2 = false;
    if (ends_with(path, ".index")) {
        snprintf(prefix, sizeof prefix, "%.*s", (int)(strlen(path) - 6), path);
        v2 = true;
    } else if (dl) {
        snprintf(prefix, sizeof prefix, "%.*s", (int)dl, path);
        v2 = true;
    } else if (!is_file(path)) {
        snprintf(prefix, sizeof prefix, "%s.index", path);
        if (is_file(prefix)) {
            snprintf(prefix, sizeof prefix, "%s", path);
            v2 = true;
        }
    }
    slim__ckpt *c;
    slim_status st;
    if (v2) {
        if ((st = slim__ckpt_new(prefix, &c, err)))
            return st;
        st = slim__tfckpt_open_v2(c, err);
    } else if (is_file(path)) {
        sniffed s = sniff(path);
        if (s == NOT_CKPT)
            return slim__tf_error(
                err, SLIM_ECORRUPT,
                "%s: not a checkpoint: neither slim's format (TFRecord records) nor "
                "TensorFlow's (a table ending in the magic number "
                "0xdb4775248b80fb57)",
                path);
        if ((st = slim__ckpt_new(path, &c, err)))
            return st;
        st = s == IS_SLIM ? slim__ckpt_open_slim(c, err) : slim__tfckpt_open_table(c, err);
    } else {
        if ((st = slim__ckpt_new(path, &c, err)))
            return st;
        st = slim__tfckpt_open_v1_sharded(c, err);
        if (st == SLIM_ENOTFOUND) {
            slim__ckpt_close(c);
            return slim__tf_error(err, SLIM_ENOTFOUND,
                                  "no checkpoint at %s: no such file or directory, nor %s.index "
                                  "(TensorFlow V2) or %s-00000-of-NNNNN (sharded V1)",
                                  path, path, path);
        }
    }
    if (st) {
        slim__ckpt_close(c);
        return st;
    }
    *out = c;
    return SLIM_OK;
}

/* The checkpoint a TensorFlow `checkpoint` state file names in dir. */
static slim_status state_file(const char *dir, char *path, size_t n, slim_error *err)
{
    char sp[1200];
    snprintf(sp, sizeof sp, "%s/checkpoint", dir);
    FILE *f = fopen(sp, "re");
    if (!f)
        return slim__tf_error(err, SLIM_ENOTFOUND, "no checkpoint in %s", dir);
    char line[2048];
    slim_status st = slim__tf_error(
        err, SLIM_ENOTFOUND, "%s has no model_checkpoint_path line: no checkpoint in %s", sp, dir);
    while (fgets(line, sizeof line, f)) {
        const char *k = "model_checkpoint_path:";
        char *s = strstr(line, k);
        if (s != line)
            continue;
        char *q = strchr(s + strlen(k), '"');
        char *e = q ? strrchr(q + 1, '"') : NULL;
        if (!q || !e)
            continue;
        *e = 0;
        /* text-format escapes: enough for paths */
        char val[1024];
        size_t o = 0;
        for (char *p = q + 1; *p && o + 1 < sizeof val; p++) {
            if (*p == '\\' && p[1])
                p++;
            val[o++] = *p;
        }
        val[o] = 0;
        char cand[2100];
        if (val[0] == '/')
            snprintf(cand, sizeof cand, "%s", val);
        else
            snprintf(cand, sizeof cand, "%s/%s", dir, val);
        /* an absolute path from another machine: the same name here */
        char idx[2200];
        snprintf(idx, sizeof idx, "%s.index", cand);
        if (val[0] == '/' && !is_file(cand) && !is_file(idx)) {
            const char *base = strrchr(val, '/');
            snprintf(cand, sizeof cand, "%s/%s", dir, base + 1);
        }
        snprintf(path, n, "%s", cand);
        st = SLIM_OK;
        break;
    }
    fclose(f);
    return st;
}

/* A checkpoint file (not a directory) opens and every entry reads. */
static slim_status verify_file(const char *path, slim_error *err)
{
    slim__ckpt *c;
    slim_status st = open_file(path, &c, err);
    if (st)
        return st;
    st = slim__ckpt_verify_all(c, err);
    slim__ckpt_close(c);
    return st;
}

slim_status slim_checkpoint_latest(const char *dir, char *path, size_t n, char *skipped,
                                   size_t n_skipped, slim_error *err)
{
    enum { MAX = 64 };
    int64_t steps[MAX];
    char(*paths)[1024] = malloc(MAX * sizeof *paths);
    if (!paths)
        return slim__error(err, SLIM_ENOMEM, "out of memory");
    if (skipped && n_skipped)
        skipped[0] = 0;
    int k = slim__rt_ckpt_list(dir, steps, paths, MAX);
    if (k < 0) {
        int e = errno;
        free(paths);
        return slim__error(err, e == ENOENT ? SLIM_ENOTFOUND : SLIM_EIO, "cannot read %s: %s", dir,
                           strerror(e));
    }
    for (int i = 0; i < k; i++) {
        slim_error e = {0};
        if (verify_file(paths[i], &e) == SLIM_OK) {
            snprintf(path, n, "%s", paths[i]);
            free(paths);
            return SLIM_OK;
        }
        if (skipped && n_skipped) {
            size_t l = strlen(skipped);
            snprintf(skipped + l, n_skipped - l, "%s%s", l ? "\n" : "", e.msg);
        }
    }
    free(paths);
    /* a TensorFlow train_dir: what its `checkpoint` state file names */
    char named[1200];
    if (!k && slim__ckpt_state_file(dir, named, sizeof named, NULL) == SLIM_OK) {
        slim_error e = {0};
        slim_status st = verify_file(named, &e);
        if (st) {
            if (err)
                *err = e;
            slim__error_prefix(err, "%s/checkpoint names %s: ", dir, named);
            return st;
        }
        snprintf(path, n, "%s", named);
        return SLIM_OK;
    }
    return slim__error(err, SLIM_ENOTFOUND,
                       "no %scheckpoint (%s*%s or %s*%s, or a `checkpoint` state file) in %s",
                       k ? "valid " : "", SLIM__CKPT_PREFIX, SLIM__CKPT_SUFFIX, SLIM__CKPT_PREFIX,
                       SLIM__CKPT_TF_SUFFIX, dir);
}

slim_status slim__ckpt_open(const char *path, slim__ckpt **out, slim_error *err)
{
    *out = NULL;
    if (!path || !path[0])
        return slim__tf_error(err, SLIM_EINVAL, "no checkpoint path given");
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        char file[1200];
        slim_status st = slim_checkpoint_latest(path, file, sizeof file, NULL, 0, err);
        if (st)
            return st;
        return open_file(file, out, err);
    }
    return open_file(path, out, err);
}

slim_status slim__ckpt_state_file(const char *dir, char *path, size_t n, slim_error *err)
{
    return state_file(dir, path, n, err);
}
