/* datasets/prep.h - preprocessing recipes (YAML, models/pipelines/) and their
 * per-example executor.
 *
 * A recipe is a list of image steps in TF-Slim's order. The executor keeps the
 * geometric steps (crops, pads, the resize, the flip) as a lazy view of the
 * source image and resamples once, straight from the JPEG region it decodes
 * (ROI, optionally DCT-scaled), into the output slot; per-pixel affine steps
 * (convert_to_float, brightness, normalize) are folded into that resampling,
 * the other pixel steps run as passes over the output. */
#ifndef SLIM_DATASETS_PREP_H
#define SLIM_DATASETS_PREP_H

#include <slim/data.h>

typedef enum prep_op {
    PREP_DECODE = 0,
    PREP_CONVERT_TO_FLOAT,    /* x / 255 (tf.image.convert_image_dtype) */
    PREP_TO_FLOAT,            /* identity (tf.to_float) */
    PREP_CENTRAL_CROP,        /* fraction (tf.image.central_crop) */
    PREP_DISTORTED_BBOX_CROP, /* tf.image.sample_distorted_bounding_box + slice */
    PREP_RANDOM_CROP,         /* height, width: uniform offset (tf.random_crop) */
    PREP_CENTRAL_CROP_TO,     /* height, width: VGG's _central_crop */
    PREP_RESIZE,              /* height, width: bilinear (tf.image.resize_images) */
    PREP_ASPECT_RESIZE,       /* smallest side to side, or uniform int in [min, max] */
    PREP_CROP_OR_PAD,         /* height, width (tf.image.resize_image_with_crop_or_pad) */
    PREP_PAD,                 /* pixels on every side (tf.pad with zeros) */
    PREP_FLIP,                /* left-right with probability p */
    PREP_BRIGHTNESS,          /* + uniform(-max_delta, max_delta) */
    PREP_SATURATION,          /* HSV saturation * uniform(lower, upper) */
    PREP_HUE,                 /* HSV hue + uniform(-max_delta, max_delta) */
    PREP_CONTRAST,            /* (x - mean_c) * uniform(lower, upper) + mean_c */
    PREP_DISTORT_COLOR,       /* TF-Slim inception distort_color (orderings, fast mode) + clip */
    PREP_CLIP,                /* min, max */
    PREP_NORMALIZE,           /* (x - sub) * mul */
    PREP_SUBTRACT_MEAN,       /* x - mean[c] */
    PREP_STANDARDIZE,         /* tf.image.per_image_standardization */
    PREP_GRAYSCALE,           /* tf.image.rgb_to_grayscale, the gray in every channel */
    PREP_OP_COUNT
} prep_op;

typedef struct prep_step {
    prep_op op;
    int line, col;
    int height, width;      /* targets; 0 = the output size */
    int side_min, side_max; /* aspect-preserving resize */
    int pad;
    int channels;           /* decode: 0 = the recipe's */
    bool exif;              /* decode: apply EXIF orientation */
    bool fast_dct;          /* decode: dct_method INTEGER_FAST (libjpeg's JDCT_IFAST) */
    bool plain_upsampling;  /* decode: fancy_upscaling false (libjpeg's box chroma upsampling) */
    bool recover_truncated; /* decode: try_recover_truncated (rows after a cut end gray) */
    bool half_pixel;        /* resize: half-pixel centres (TF2); TF1/TF-Slim: false */
    bool fast_mode;         /* distort_color */
    int ordering;           /* distort_color: -1 = random among the cases */
    double fraction;        /* central_crop */
    double min_covered, aspect[2], area[2];
    int max_attempts;
    double p;      /* flip probability */
    double lo, hi; /* saturation/contrast factor range, clip range */
    double delta;  /* brightness/hue max delta */
    double v[4];   /* normalize sub / subtract_mean mean (per channel) */
    double mul[4];
    int nv, nmul;
} prep_step;

typedef struct slim__recipe {
    char *name, *path;
    int image_size, channels;
    char *image_key, *label_key, *format_key;
    char *bbox_key;     /* NULL: boxes are not read (keys: {bbox: none}) */
    int image_shape[3]; /* raw (non-encoded) images: H, W, C */
    prep_step *train, *eval;
    int n_train, n_eval;
} slim__recipe;

/* name: a file path (contains '/' or ends in .yaml) or a recipe name looked
 * up as DIR/NAME.yaml in dir, $SLIM_PIPELINES, the source tree, the install. */
slim_status slim__recipe_load(const char *name, const char *dir, slim__recipe **out,
                              slim_error *err);
slim_status slim__recipe_parse(const char *path, const char *text, slim__recipe **out,
                               slim_error *err);
void slim__recipe_free(slim__recipe *r);
/* TF-Slim's --use_grayscale: an rgb_to_grayscale step in the train (or eval)
 * section, before its first normalize / subtract_mean /
 * per_image_standardization (at the end without one), where TF-Slim's
 * preprocessing converts. */
slim_status slim__recipe_add_grayscale(slim__recipe *r, bool training, slim_error *err);
const char *slim__prep_op_name(prep_op op);

/* A compiled recipe section for one output size. */
typedef struct slim__prep {
    const prep_step *steps;
    int n;
    int out_h, out_w, channels;
    bool roi, dct;
    bool wants_boxes; /* a distorted_bounding_box_crop step reads the example's boxes */
    const slim__recipe *recipe;
} slim__prep;

slim_status slim__prep_init(slim__prep *p, const slim__recipe *r, bool training, int out_h,
                            int out_w, int channels, bool roi, bool dct, slim_error *err);

/* Per-thread scratch: a JPEG decompressor and buffers, reused. */
typedef struct slim__prep_scratch slim__prep_scratch;
slim__prep_scratch *slim__prep_scratch_new(void);
void slim__prep_scratch_free(slim__prep_scratch *s);

/* Normalized boxes (TF's order ymin, xmin, ymax, xmax), borrowed from an
 * Example: box i's ymin is ymin[i * stride]. */
typedef struct prep_boxes {
    const float *ymin, *xmin, *ymax, *xmax;
    int stride;
    int n;
} prep_boxes;

/* What one example's preprocessing was given. */
typedef struct prep_input {
    const uint8_t *data; /* encoded JPEG/PNG, or raw pixels (u8 or f32) */
    size_t len;
    bool raw; /* data holds raw H x W x C pixels */
    bool raw_f32;
    int raw_h, raw_w, raw_c;
    const char *name; /* for errors: "shard-00001: record 7" */
    prep_boxes boxes; /* for distorted_bounding_box_crop; n = 0: the whole image */
} prep_input;

/* What it decided (tests, previews, statistics). */
typedef struct prep_trace {
    int src_h, src_w;                   /* decoded image size (after EXIF orientation) */
    int crop_x, crop_y, crop_w, crop_h; /* window in source pixels (may extend past for pads) */
    int resize_w, resize_h;             /* 0 = no resize */
    int view_x, view_y, view_w, view_h; /* crop of the resized image */
    bool flip;
    int n_boxes;              /* usable boxes the distorted crop saw */
    bool bbox_fallback;       /* no attempt satisfied the constraints: the whole image */
    int scale_denom;          /* DCT scale used */
    bool roi;                 /* decoded a region, not the whole image */
    bool cut;                 /* ... from a restart-indexed cut of just its MCUs */
    int decoded_w, decoded_h; /* pixels decoded */
    double brightness, saturation, hue, contrast; /* drawn values (0 / 1 when unused) */
    int color_ordering;
    /* stage times (seconds) and intervals for trace events */
    double t[SLIM_STAGE_COUNT];
    struct {
        slim_stage stage;
        double t0, t1;
    } ev[8];
    int n_ev;
} prep_trace;

/* Run one example: out is (out_h, out_w, channels) f32. Randomness comes from
 * (seed, epoch, index) only. */
slim_status slim__prep_run(const slim__prep *p, slim__prep_scratch *s, const prep_input *in,
                           uint64_t seed, int64_t epoch, int64_t index, float *out, prep_trace *tr,
                           slim_error *err);

double slim__now(void); /* CLOCK_MONOTONIC seconds */

/* bbox.c: the boxes of an Example under key (KEY/{ymin,xmin,ymax,xmax}, or
 * KEY itself holding 4 floats per box); none when absent or key is NULL.
 * Inconsistent lists are SLIM_ECORRUPT naming the record. */
slim_status slim__bbox_from_example(const slim_example *ex, const char *key, prep_boxes *b,
                                    const char *name, const char *file, slim_error *err);
/* Pixel rectangles (x0, y0, x1, y1; 4 ints each, room for b->n) of the usable
 * boxes of a W x H image: clipped to it, NaN / inverted / pixel-less dropped. */
int slim__bbox_pixels(const prep_boxes *b, int W, int H, int *rects);
/* TF's sample_distorted_bounding_box over n rectangles (0: the whole image);
 * false when every attempt failed (the crop is then the whole image). Draws
 * are slim_rand_u64(seed, stream, step * 64 + k). */
bool slim__bbox_sample(const prep_step *s, int W, int H, const int *rects, int n, uint64_t seed,
                       uint64_t stream, int step, int *x, int *y, int *w, int *h);

/* pixel.c: passes over an (H,W,C) float image of npix pixels (n = values). */
void slim__px_saturation(float *rgb, size_t npix, float factor);
void slim__px_hue(float *rgb, size_t npix, float delta);
void slim__px_contrast(float *x, size_t npix, int channels, float factor);
void slim__px_clip(float *x, size_t n, float lo, float hi);
void slim__px_standardize(float *x, size_t n);

#endif
