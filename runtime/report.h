/* runtime/report.h - what a run writes for people and tools: TensorBoard
 * event files, metrics as JSON lines, Chrome trace-event JSON. */
#ifndef SLIM_RUNTIME_REPORT_H
#define SLIM_RUNTIME_REPORT_H

#include <slim/slim.h>

#include <stdio.h>

/* ---- TensorBoard: DIR/events.out.tfevents.TIME.HOST ---------------------------- */

/* Every write appends whole records (or lines) or nothing: one that cannot
 * be written whole (a full disk) is cut off again and comes back as an
 * error, the file still ending at its last whole one; the next write tries
 * again. */

/* Events for dir (NULL only when out of memory). The file, with its first
 * event, is made at the first write that succeeds: a full disk leaves no
 * empty file behind. */
typedef struct slim__rt_events slim__rt_events;
slim__rt_events *slim__rt_events_new(const char *dir);
/* One Event with n scalar summaries (tags[i] = values[i]) at step, written through. */
slim_status slim__rt_events_scalars(slim__rt_events *e, int64_t step, const char *const *tags,
                                    const double *values, int n, slim_error *err);
void slim__rt_events_close(slim__rt_events *e);
const char *slim__rt_events_path(const slim__rt_events *e); /* "" until made */

/* ---- JSON lines ------------------------------------------------------------------ */

typedef struct slim__rt_jsonl slim__rt_jsonl;
/* Appends to path (created if needed). */
slim__rt_jsonl *slim__rt_jsonl_open(const char *path, slim_error *err);
void slim__rt_jsonl_close(slim__rt_jsonl *j);
/* {"k": v, ...}: n numeric fields, then an optional string field (key NULL = none). */
slim_status slim__rt_jsonl_write(slim__rt_jsonl *j, const char *const *keys, const double *values,
                                 int n, const char *skey, const char *sval, slim_error *err);
/* Rewrites path keeping its whole lines whose "step" is at most max_step
 * (and lines without one): a resumed run logs the steps after its
 * checkpoint again, and a cut last line goes. *dropped: lines left out. The
 * temporary files of a trim that was killed are removed. */
slim_status slim__rt_jsonl_trim(const char *path, int64_t max_step, int *dropped, slim_error *err);
/* A JSON string literal of s into buf (quotes included). */
const char *slim__rt_json_str(const char *s, char *buf, size_t n);

/* ---- Chrome trace events (chrome://tracing, Perfetto) ---------------------------- */

typedef struct slim__rt_trace slim__rt_trace;
/* At most max_events events are kept (later ones are counted and dropped). */
slim__rt_trace *slim__rt_trace_new(size_t max_events);
void slim__rt_trace_free(slim__rt_trace *t);
/* Monotonic seconds (the time base of every event). */
double slim__rt_now(void);
/* Name a track (a "thread" of the trace): tid >= 0. */
void slim__rt_trace_thread(slim__rt_trace *t, int tid, const char *name, int sort_index);
/* A complete event [begin, end) on a track; args_json: "{...}" or NULL. Thread-safe. */
void slim__rt_trace_span(slim__rt_trace *t, int tid, const char *name, const char *cat,
                         double begin, double end, const char *args_json);
/* A counter track value (queue depth). */
void slim__rt_trace_counter(slim__rt_trace *t, const char *name, double when, double value);
/* Write {"traceEvents": [...]} to path. */
slim_status slim__rt_trace_write(slim__rt_trace *t, const char *path, slim_error *err);
size_t slim__rt_trace_dropped(const slim__rt_trace *t);

#endif
