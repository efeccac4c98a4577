/* util.h: diagnostics, files and small strings shared by every module of hkgen. */
#ifndef HK_UTIL_H
#define HK_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>

/* Exit statuses of the CLI. */
enum { HK_OK = 0, HK_EFAIL = 1, HK_EUSAGE = 2 };

/* Diagnostics: one line per problem on stderr; the counter lets a stage
   report every problem and fail once at the end. */
void diag_error(const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_warn(const char *file, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
int diag_count(void);
void diag_reset(void);
void diag_set_quiet(int quiet);
/* From now (all threads): errors and warnings counted but not shown (a
   trial whose failure is expected, such as a build-time candidate that
   spills). Returns the setting before. */
int diag_silence(int on);
const char *diag_prog(void);

/* Memory that never returns NULL: out of memory ends the program. */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t m);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A growable string. */
typedef struct {
  char *s;
  size_t len, cap;
} hk_buf;
void buf_init(hk_buf *b);
void buf_add(hk_buf *b, const char *s, size_t n);
void buf_puts(hk_buf *b, const char *s);
void buf_printf(hk_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void buf_free(hk_buf *b);
char *buf_steal(hk_buf *b);

/* Files. fs_read_file reads a regular file (else EISDIR for a directory,
   EINVAL for anything else) of at most max bytes (else EFBIG); returns -1
   and sets errno. fs_read_stream also reads a pipe or a device to its end
   (a spec from `<(...)` or /dev/stdin). */
int fs_read_file(const char *path, size_t max, char **data, size_t *len);
int fs_read_stream(const char *path, size_t max, char **data, size_t *len);
int fs_write_atomic(const char *path, const void *data, size_t len);
int fs_write_file(const char *path, const void *data, size_t len, int durable);
/* Flushes the file system holding dir (one call after many fs_write_file). */
int fs_sync_dir(const char *dir);
int fs_mkdirs(const char *path);
int fs_exists(const char *path);
/* A data folder of hkgen: $ENV if set, else the first of the NULL-terminated
   rels (relative to the binary's folder) that holds marker; NULL if none. */
const char *fs_data_dir(const char *env, const char *marker, const char *const *rels, char *out,
                        size_t n);
/* Removes path and everything under it (symbolic links are removed, never
   followed); 0 on success. */
int fs_remove_tree(const char *path);
/* One writer at a time per output folder (builds and merges): the fd of
   the held lock, or -1 with an error said. fs_unlock_folder removes the
   lock file, then releases it. */
int fs_lock_folder(const char *dir);
/* "$TMPDIR/<prefix>.<pid>.XXXXXX" for mkdtemp: the pid lets a later run
   find folders that a killed one left (fs_sweep_tmp). */
char *fs_tmp_template(const char *prefix);
/* Removes the temporary folders of hkgen processes that no longer run. */
void fs_sweep_tmp(void);
/* Starts argv[0] (searched on PATH) with fds[0..2] as its stdin, stdout and
   stderr, under a watcher process (*pid, exiting as the program does) that
   leads a process group of its own: when the thread that started it is gone
   (PR_SET_PDEATHSIG), the watcher kills the group, so a killed hkgen leaves
   neither the program nor its children (clang's -cc1) behind. 0 and *pid,
   else the errno of the failed start (exec included). */
int fs_spawn(char *const argv[], const int fds[3], pid_t *pid);
void fs_unlock_folder(const char *dir, int fd);
char *fs_join(const char *dir, const char *name);
char *fs_dirname(const char *path);

/* Strings. */
int str_is_c_identifier(const char *s);
unsigned str_edit_distance(const char *a, const char *b);
const char *str_closest(const char *word, const char *const *cands, size_t n);

#endif
