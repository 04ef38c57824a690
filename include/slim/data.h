/*
 * slim/data.h - datasets and the input pipeline.
 *
 *   records     TFRecord files (framing + masked CRC-32C, optional GZIP/ZLIB)
 *   examples    tf.train.Example messages (TF-Slim keys: image/encoded, ...)
 *   images      JPEG (libjpeg-turbo) and PNG (libpng) decoding, PNG writing
 *   datasets    what TF-Slim's dataset factories describe: split sizes,
 *               classes, label names, file patterns
 *   pipeline    shards -> shuffle -> decode + preprocess (a recipe, YAML) on
 *               worker threads -> fixed-shape batches in a bounded queue
 *
 * Typical training use:
 *
 *   slim_pipeline_opts o = {0};
 *   o.dataset_name = "imagenet"; o.dataset_dir = "/data/imagenet"; o.split = "train";
 *   o.recipe = "inception";  o.is_training = true;  o.batch_size = 32;  o.image_size = 224;
 *   o.num_threads = 2;  o.seed = 1;
 *   slim_pipeline *p;  slim_pipeline_new(&o, &p, &err);
 *   const slim_dataset_info *d = slim_pipeline_dataset(p);   d->num_classes, ...
 *   float *x = malloc(32 * 224 * 224 * 3 * sizeof *x);  int32_t y[32];
 *   slim_batch_info bi;
 *   while (slim_pipeline_next(p, x, y, &bi, &err) == SLIM_OK && !bi.end_of_data) { ... }
 *   slim_pipeline_free(p);
 *
 * Every fallible call returns a slim_status and fills the optional slim_error;
 * errors about data name the file and the byte offset (and the record).
 */
#ifndef SLIM_DATA_H
#define SLIM_DATA_H

#include "slim.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- CRC-32C (Castagnoli), as TFRecord uses it ------------------------- */

/* crc32c(0, "123456789", 9) == 0xE3069283. Continue a running CRC by passing it back. */
SLIM_EXPORT uint32_t slim_crc32c(uint32_t crc, const void *data, size_t n);
/* TFRecord's masked CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
SLIM_EXPORT uint32_t slim_crc32c_mask(uint32_t crc);

/* ---- TFRecord files ---------------------------------------------------- */

typedef enum slim_compression {
    SLIM_COMPRESSION_AUTO =
        0, /* reading: detect (framing CRC, gzip or zlib header); writing: NONE */
    SLIM_COMPRESSION_NONE,
    SLIM_COMPRESSION_GZIP, /* one gzip stream over the whole file (TF's "GZIP") */
    SLIM_COMPRESSION_ZLIB, /* one zlib stream over the whole file (TF's "ZLIB") */
} slim_compression;

typedef struct slim_tfrecord_reader slim_tfrecord_reader;

/* Open for sequential reading. check_data_crc: verify every payload's CRC
 * (the length CRC is always checked). */
SLIM_EXPORT slim_status slim_tfrecord_open(const char *path, slim_compression comp,
                                           bool check_data_crc, slim_tfrecord_reader **out,
                                           slim_error *err);
/* The next record: *data is valid until the next call. At the end of the
 * file returns SLIM_OK with *data == NULL. offset: byte offset of the record
 * (in the uncompressed stream for compressed files). Errors name the file,
 * the byte offset and the record number. */
SLIM_EXPORT slim_status slim_tfrecord_next(slim_tfrecord_reader *r, const uint8_t **data,
                                           size_t *len, int64_t *offset, slim_error *err);
SLIM_EXPORT slim_compression slim_tfrecord_compression(const slim_tfrecord_reader *r);
SLIM_EXPORT void slim_tfrecord_close(slim_tfrecord_reader *r);

typedef struct slim_tfrecord_writer slim_tfrecord_writer;
SLIM_EXPORT slim_status slim_tfrecord_writer_new(const char *path, slim_compression comp,
                                                 slim_tfrecord_writer **out, slim_error *err);
SLIM_EXPORT slim_status slim_tfrecord_write(slim_tfrecord_writer *w, const void *data, size_t len,
                                            slim_error *err);
/* Flush buffered data (and the compressor) to the OS; sync: fsync too. */
SLIM_EXPORT slim_status slim_tfrecord_flush(slim_tfrecord_writer *w, bool sync, slim_error *err);
/* Finish (compressor trailer), fsync, close. The writer is freed either way. */
SLIM_EXPORT slim_status slim_tfrecord_writer_close(slim_tfrecord_writer *w, slim_error *err);
/* Free without finishing (after an error). NULL is a no-op. */
SLIM_EXPORT void slim_tfrecord_writer_free(slim_tfrecord_writer *w);

/* ---- tf.train.Example -------------------------------------------------- */

typedef struct slim_example slim_example;

typedef enum slim_feature_kind {
    SLIM_FEATURE_NONE = 0, /* a key with an empty Feature */
    SLIM_FEATURE_BYTES,
    SLIM_FEATURE_FLOAT,
    SLIM_FEATURE_INT64,
} slim_feature_kind;

SLIM_EXPORT slim_status slim_example_new(slim_example **out, slim_error *err);
/* Parse a serialized tf.train.Example. */
SLIM_EXPORT slim_status slim_example_parse(const void *data, size_t len, slim_example **out,
                                           slim_error *err);
SLIM_EXPORT void slim_example_free(slim_example *ex);
/* Keys in stored order. */
SLIM_EXPORT int slim_example_count(const slim_example *ex);
SLIM_EXPORT const char *slim_example_key(const slim_example *ex, int i, slim_feature_kind *kind,
                                         size_t *n_values);
/* Lookups: SLIM_ENOTFOUND if the key is absent, SLIM_ETYPE if it holds another kind. */
SLIM_EXPORT slim_status slim_example_bytes(const slim_example *ex, const char *key, size_t i,
                                           const uint8_t **data, size_t *len);
SLIM_EXPORT slim_status slim_example_int64s(const slim_example *ex, const char *key,
                                            const int64_t **vals, size_t *n);
SLIM_EXPORT slim_status slim_example_floats(const slim_example *ex, const char *key,
                                            const float **vals, size_t *n);
/* Building (values are copied). Setting a key again replaces it. */
SLIM_EXPORT slim_status slim_example_set_bytes(slim_example *ex, const char *key, const void *data,
                                               size_t len);
SLIM_EXPORT slim_status slim_example_set_int64s(slim_example *ex, const char *key,
                                                const int64_t *vals, size_t n);
SLIM_EXPORT slim_status slim_example_set_floats(slim_example *ex, const char *key,
                                                const float *vals, size_t n);
/* Serialize in the stored key order; *out is malloc'ed (free() it). */
SLIM_EXPORT slim_status slim_example_serialize(const slim_example *ex, uint8_t **out, size_t *len,
                                               slim_error *err);

/* ---- images ------------------------------------------------------------- */

/* An 8-bit image, rows top to bottom, channels interleaved (H,W,C). */
typedef struct slim_image {
    int height, width, channels;
    uint8_t *data;  /* malloc'ed; slim_image_fini frees it */
    bool truncated; /* a JPEG that ended early, decoded with try_recover_truncated */
} slim_image;

typedef struct slim_decode_opts {
    int channels;            /* 0 = as stored (1 or 3), 1 = gray, 3 = RGB */
    bool exif_orientation;   /* apply the EXIF Orientation tag (JPEG) */
    int scale_denom;         /* JPEG DCT scaling 1, 2, 4 or 8 (0 = 1) */
    const char *name;        /* what errors call the data ("file.jpg", "shard: record 7") */
    bool dct_fast;           /* JPEG: tf.image.decode_jpeg's dct_method INTEGER_FAST */
    bool no_fancy_upscaling; /* JPEG: its fancy_upscaling false (box chroma upsampling) */
    /* JPEG: tf.image.decode_jpeg's try_recover_truncated: a file that ends
     * early decodes (the missing rows gray) instead of failing */
    bool try_recover_truncated;
} slim_decode_opts;

typedef enum slim_image_format {
    SLIM_IMAGE_UNKNOWN = 0,
    SLIM_IMAGE_JPEG,
    SLIM_IMAGE_PNG,
} slim_image_format;

/* By the magic bytes. */
SLIM_EXPORT slim_image_format slim_image_sniff(const void *data, size_t len);
/* Width, height and stored channels from the header, without decoding. */
SLIM_EXPORT slim_status slim_image_probe(const void *data, size_t len, const char *name,
                                         int *height, int *width, int *channels, slim_error *err);
/* Decode JPEG or PNG. Corrupt or truncated data is an error naming opts->name. */
SLIM_EXPORT slim_status slim_image_decode(const void *data, size_t len,
                                          const slim_decode_opts *opts, slim_image *out,
                                          slim_error *err);
SLIM_EXPORT void slim_image_fini(slim_image *img);
/* PNG encoding (8-bit gray or RGB). */
SLIM_EXPORT slim_status slim_image_encode_png(const slim_image *img, uint8_t **out, size_t *len,
                                              slim_error *err);
SLIM_EXPORT slim_status slim_image_write_png(const char *path, const slim_image *img,
                                             slim_error *err);

/* ---- datasets ----------------------------------------------------------- */

/* What TF-Slim's dataset factories describe, for one split. Names known:
 * "mnist", "fashion_mnist", "cifar10", "cifar100", "imagenet", "flowers";
 * any other name (or NULL) = a generic folder of TFRecord shards described by
 * DIR/dataset.yaml or DIR/labels.txt (see README.md, "Data"). */
typedef struct slim_dataset_info {
    const char *name;
    const char *split;
    int64_t num_examples;  /* in this split; 0 = unknown (counted when read) */
    int num_classes;       /* as the model's head sees it (imagenet: 1001, 0 = background) */
    int label_offset_hint; /* imagenet: 1 with --labels_offset for 1000-class heads */
    int image_height, image_width, channels; /* stored size when fixed (mnist 28x28x1), else 0 */
    int n_files;
    const char *const *files;       /* the split's TFRecord shards, sorted */
    const char *const *label_names; /* num_classes entries (NULL entries where unnamed), or NULL */
    const char *default_recipe;     /* "lenet", "cifarnet", "inception", ... */
} slim_dataset_info;

typedef struct slim_dataset slim_dataset;
SLIM_EXPORT slim_status slim_dataset_open(const char *name, const char *dir, const char *split,
                                          slim_dataset **out, slim_error *err);
SLIM_EXPORT const slim_dataset_info *slim_dataset_get_info(const slim_dataset *d);
SLIM_EXPORT void slim_dataset_free(slim_dataset *d);
/* Read a labels.txt ("0:name" per line, TF-Slim's format) into names[0..n). */
SLIM_EXPORT slim_status slim_labels_read(const char *path, char ***names, int *n, slim_error *err);
SLIM_EXPORT void slim_labels_free(char **names, int n);
/* TF-Slim's preprocessing_factory: the recipe name for a model name
 * ("inception_v3" -> "inception", "vgg_16" -> "vgg", "lenet" -> "lenet"); NULL if unknown. */
SLIM_EXPORT const char *slim_recipe_for_model(const char *model_name);

/* ---- the pipeline ------------------------------------------------------- */

typedef enum slim_on_error {
    SLIM_ON_ERROR_FAIL = 0, /* the first corrupt record/image ends the pipeline with its error */
    SLIM_ON_ERROR_SKIP,     /* counted, reported in stats, replaced (see slim_batch_info) */
} slim_on_error;

/* Stages timed per example (stats and trace events). */
typedef enum slim_stage {
    SLIM_STAGE_READ = 0, /* record/file bytes in (incl. CRC, Example parse) */
    SLIM_STAGE_DECODE,   /* JPEG/PNG decode (ROI, DCT-scaled) */
    SLIM_STAGE_CROP,     /* crop/box sampling and geometry */
    SLIM_STAGE_RESIZE,   /* resampling to the output size (incl. flip) */
    SLIM_STAGE_COLOR,    /* color distortion, normalization, writing the batch slot */
    SLIM_STAGE_BATCH,    /* handing a finished batch to the caller (copy) */
    SLIM_STAGE_WAIT,     /* a worker blocked on a full queue (caller too slow) */
    SLIM_STAGE_COUNT
} slim_stage;
SLIM_EXPORT const char *slim_stage_name(slim_stage s); /* "read", "decode", ... */

/* One timed interval, delivered to opts.trace from the thread that ran it.
 * Times are CLOCK_MONOTONIC seconds. thread: 0..num_threads-1 for workers,
 * -1 for the caller's thread (BATCH). */
typedef struct slim_pipeline_event {
    int thread;
    slim_stage stage;
    double t_begin, t_end;
    int64_t epoch, index; /* the example (index within its epoch); -1 for batch events */
} slim_pipeline_event;
typedef void (*slim_pipeline_trace_fn)(const slim_pipeline_event *ev, void *user);

/* Zero-initialized opts give the defaults noted. */
typedef struct slim_pipeline_opts {
    /* Data: file_pattern (comma-separated globs of TFRecord shards, image
     * files or image folders) or dataset_name/dataset_dir/split. */
    const char *file_pattern;
    const char *dataset_name; /* see slim_dataset_open */
    const char *dataset_dir;
    const char *split; /* NULL = "train" when is_training, else "validation"/"test" */
    /* Preprocessing: a recipe name in models/pipelines ("inception", "vgg",
     * "cifarnet", "lenet", ...) or a path to a YAML file; NULL = the dataset's
     * default, else "inception". recipe_dir: where names are looked up (NULL =
     * $SLIM_PIPELINES, else the installed/source models/pipelines). */
    const char *recipe;
    const char *recipe_dir;
    bool is_training;     /* the recipe's train section, shuffling; else eval, in order */
    int batch_size;       /* N (default 32) */
    int image_size;       /* H = W of the output (0 = the recipe's default) */
    int channels;         /* C (0 = the recipe's default: 3, lenet 1) */
    int num_threads;      /* preprocessing workers (default 1) */
    int num_readers;      /* shards read interleaved (default: 4 training, 1 eval) */
    int shuffle_buffer;   /* examples (default: 20 * batch_size training, 0 eval; <0 = none) */
    int prefetch_batches; /* queue depth in batches (default 2 + num_threads/8) */
    uint64_t seed;
    int64_t num_epochs;  /* 0 = forever (training default); eval default 1 */
    bool drop_remainder; /* with num_epochs > 0: drop the last partial batch */
    slim_on_error on_error;
    int labels_offset; /* subtracted from stored labels (TF-Slim --labels_offset) */
    /* Feature keys (NULL = the recipe's, defaulting to TF-Slim's). */
    const char *image_key, *label_key;
    /* Decoding shortcuts (default on): ROI decoding of the crop, and DCT-scaled
     * decoding when the output is at most half the crop in both directions. */
    bool no_roi_decode, no_dct_scaling;
    /* TF-Slim's --use_grayscale: an rgb_to_grayscale step before the recipe's
     * normalization; the gray goes to every channel of a 3-channel model */
    bool grayscale;
    /* Called from worker threads for every timed stage (NULL = none). */
    slim_pipeline_trace_fn trace;
    void *trace_user;
    /* Data-parallel training (0 and 0 or 1 = alone): the run's one stream of
     * examples is cut into blocks of batch_size, and this process takes
     * blocks replica, replica + replicas, ...: its batches are rows
     * [replica * N, (replica + 1) * N) of the batches of replicas * N that one
     * process would make (shuffle_buffer defaults to 20 such batches), so the
     * processes together read each example once per epoch, in the same
     * order. Positions (consumed) count the whole stream. */
    int replica, replicas;
    /* With replicas: share by file instead (each epoch's shuffled files i
     * with i % replicas == replica): each process reads only its own
     * files, in an order of its own; positions count its own examples.
     * Needs at least as many files as replicas. */
    bool replica_by_file;
} slim_pipeline_opts;

typedef struct slim_batch_info {
    bool end_of_data;    /* no batch was returned: every epoch is done */
    int n_valid;         /* examples in this batch; < batch_size only for the last batch
                          * (num_epochs > 0): the rest is zero images with label 0 */
    int64_t epoch;       /* epoch of the first example (0-based) */
    int64_t index;       /* its index within that epoch */
    int64_t consumed;    /* examples handed out before this batch, all epochs */
    int n_replaced;      /* skipped examples in this batch, replaced by copies of others */
    double wait_seconds; /* how long this call blocked for the batch to be ready */
} slim_batch_info;

typedef struct slim_pipeline_stats {
    double stage_seconds[SLIM_STAGE_COUNT]; /* summed over threads */
    int64_t stage_count[SLIM_STAGE_COUNT];
    int64_t examples; /* preprocessed so far */
    int64_t batches;  /* handed out */
    int64_t skipped;  /* corrupt records/images skipped (on_error skip) */
    int64_t bytes_read;
    int64_t roi_decodes, scaled_decodes, full_decodes;
    int queue_depth; /* finished batches waiting now */
    int queue_capacity;
    double wait_seconds;    /* caller's total time blocked in next */
    double elapsed_seconds; /* since slim_pipeline_new */
    int num_threads;
    int64_t epoch_size;      /* examples per epoch once known (after one full pass), else 0 */
    int64_t boxed_examples;  /* examples whose distorted crop used their own bounding boxes */
    int64_t indexed_decodes; /* JPEG regions decoded from a restart-indexed cut (slimrun convert's
                                JPEGs): only the MCUs the crop touches */
} slim_pipeline_stats;

/* A point in the example stream, for checkpoints. */
typedef struct slim_pipeline_position {
    int64_t epoch;    /* epoch of the next example to hand out */
    int64_t index;    /* its index within the epoch */
    int64_t consumed; /* examples handed out, all epochs (with replicas: by all of them) */
} slim_pipeline_position;

typedef struct slim_pipeline slim_pipeline;

/* Opens the data, loads the recipe, starts the workers (they begin filling
 * the queue at once). */
SLIM_EXPORT slim_status slim_pipeline_new(const slim_pipeline_opts *opts, slim_pipeline **out,
                                          slim_error *err);
/* Blocks until the next batch is ready and copies it out: images (N,H,W,C) f32,
 * labels (N) i32. At the end of the data: SLIM_OK with info->end_of_data. */
SLIM_EXPORT slim_status slim_pipeline_next(slim_pipeline *p, float *images, int32_t *labels,
                                           slim_batch_info *info, slim_error *err);
/* The same without the copy: *images / *labels point into the queue and stay
 * valid until the next call of next/next_view/free. Both are
 * SLIM_BIND_ALIGN-aligned with SLIM_BIND_SLACK bytes after them, so they can
 * be bound as program inputs (slim_program_bind_input) instead of copied. */
SLIM_EXPORT slim_status slim_pipeline_next_view(slim_pipeline *p, const float **images,
                                                const int32_t **labels, slim_batch_info *info,
                                                slim_error *err);
/* Output shape: (N,H,W,C). */
SLIM_EXPORT void slim_pipeline_shape(const slim_pipeline *p, int *n, int *h, int *w, int *c);
SLIM_EXPORT const slim_dataset_info *slim_pipeline_dataset(const slim_pipeline *p);
SLIM_EXPORT void slim_pipeline_get_stats(const slim_pipeline *p, slim_pipeline_stats *st);
/* The first skip messages (file, offset, reason); i < 16. NULL past the end. */
SLIM_EXPORT const char *slim_pipeline_skip_message(const slim_pipeline *p, int i);
SLIM_EXPORT void slim_pipeline_position_get(const slim_pipeline *p, slim_pipeline_position *pos);
/* Continue from a saved position (same data, opts and seed give the same
 * batches as the uninterrupted run). Discards prefetched batches. */
SLIM_EXPORT slim_status slim_pipeline_restore(slim_pipeline *p, const slim_pipeline_position *pos,
                                              slim_error *err);
SLIM_EXPORT void slim_pipeline_free(slim_pipeline *p);

/* One image through a recipe outside a pipeline (slimrun predict, data preview):
 * the output is (H,W,C) f32 as the pipeline would produce for (seed, epoch, index). */
typedef struct slim_preprocessor slim_preprocessor;
SLIM_EXPORT slim_status slim_preprocessor_new(const slim_pipeline_opts *opts,
                                              slim_preprocessor **out, slim_error *err);
SLIM_EXPORT void slim_preprocessor_shape(const slim_preprocessor *pp, int *h, int *w, int *c);
SLIM_EXPORT slim_status slim_preprocessor_run(slim_preprocessor *pp, const void *data, size_t len,
                                              const char *name, int64_t epoch, int64_t index,
                                              float *out, slim_error *err);
SLIM_EXPORT void slim_preprocessor_free(slim_preprocessor *pp);

#ifdef __cplusplus
}
#endif
#endif /* SLIM_DATA_H */
