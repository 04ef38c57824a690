/* tests/interop/fuzz_stubs.c - what runtime/ckpt_reader.c calls for files on
 * disk (slim's TFRecord format, train_dir listing), which the fuzz target
 * never reaches: its inputs are in memory. Only the fuzz build links these. */
#include "engine/error.h"

#include <slim/data.h>
#include <slim/train.h>

slim_status slim_tfrecord_open(const char *path, slim_compression comp, bool check_data_crc,
                               slim_tfrecord_reader **out, slim_error *err)
{
    (void)path, (void)comp, (void)check_data_crc;
    *out = NULL;
    return slim__error(err, SLIM_EUNSUPPORTED, "not in the fuzz build");
}

slim_status slim_tfrecord_next(slim_tfrecord_reader *r, const uint8_t **data, size_t *len,
                               int64_t *offset, slim_error *err)
{
    (void)r, (void)data, (void)len, (void)offset;
    return slim__error(err, SLIM_EUNSUPPORTED, "not in the fuzz build");
}

void slim_tfrecord_close(slim_tfrecord_reader *r)
{
    (void)r;
}

slim_status slim_checkpoint_latest(const char *dir, char *path, size_t n, char *skipped,
                                   size_t n_skipped, slim_error *err)
{
    (void)dir, (void)path, (void)n, (void)skipped, (void)n_skipped;
    return slim__error(err, SLIM_EUNSUPPORTED, "not in the fuzz build");
}
