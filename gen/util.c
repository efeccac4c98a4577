/* util.c: diagnostics, memory, buffers, files and strings. */
#define _GNU_SOURCE
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static atomic_int diag_errors;
static int diag_quiet;
static atomic_int diag_silent; /* diag_silence: errors counted, not shown */

static void diag_vemit(const char *kind, const char *file, int line, int col,
                       const char *fmt, va_list ap) {
  if (diag_silent) return;
  hk_buf b;
  buf_init(&b);
  if (file && line > 0)
    buf_printf(&b, "%s:%d:%d: ", file, line, col);
  else if (file)
    buf_printf(&b, "%s: ", file);
  else
    buf_printf(&b, "hkgen: ");
  buf_printf(&b, "%s: ", kind);
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  buf_puts(&b, msg);
  buf_puts(&b, "\n");
  fputs(b.s, stderr); /* one write per line keeps threads from interleaving */
  buf_free(&b);
}

void diag_error(const char *file, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vemit("error", file, line, col, fmt, ap);
  va_end(ap);
  atomic_fetch_add(&diag_errors, 1);
}

void diag_warn(const char *file, int line, int col, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_vemit("warning", file, line, col, fmt, ap);
  va_end(ap);
}

void diag_note(const char *fmt, ...) {
  if (diag_quiet) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
}

int diag_count(void) { return atomic_load(&diag_errors); }
void diag_reset(void) { atomic_store(&diag_errors, 0); }
void diag_set_quiet(int quiet) { diag_quiet = quiet; }
int diag_silence(int on) {
  return atomic_exchange(&diag_silent, on);
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fputs("hkgen: out of memory\n", stderr);
    exit(HK_EFAIL);
  }
  return p;
}

void *xcalloc(size_t n, size_t m) {
  void *p = calloc(n ? n : 1, m ? m : 1);
  if (!p) {
    fputs("hkgen: out of memory\n", stderr);
    exit(HK_EFAIL);
  }
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) {
    fputs("hkgen: out of memory\n", stderr);
    exit(HK_EFAIL);
  }
  return p;
}

char *xstrdup(const char *s) {
  size_t n = strlen(s) + 1;
  return memcpy(xmalloc(n), s, n);
}

char *xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  if (vasprintf(&s, fmt, ap) < 0) {
    fputs("hkgen: out of memory\n", stderr);
    exit(HK_EFAIL);
  }
  va_end(ap);
  return s;
}

void buf_init(hk_buf *b) {
  b->cap = 256;
  b->len = 0;
  b->s = xmalloc(b->cap);
  b->s[0] = 0;
}

void buf_add(hk_buf *b, const char *s, size_t n) {
  if (b->len + n + 1 > b->cap) {
    while (b->len + n + 1 > b->cap) b->cap *= 2;
    b->s = xrealloc(b->s, b->cap);
  }
  memcpy(b->s + b->len, s, n);
  b->len += n;
  b->s[b->len] = 0;
}

void buf_puts(hk_buf *b, const char *s) { buf_add(b, s, strlen(s)); }

void buf_printf(hk_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) {
    fputs("hkgen: out of memory\n", stderr);
    exit(HK_EFAIL);
  }
  buf_add(b, s, (size_t)n);
  free(s);
}

void buf_free(hk_buf *b) {
  free(b->s);
  b->s = NULL;
  b->len = b->cap = 0;
}

char *buf_steal(hk_buf *b) {
  char *s = b->s;
  b->s = NULL;
  b->len = b->cap = 0;
  return s;
}

/* Reads fd to its end (at most max bytes, else EFBIG), closing it; size is
   a first guess of the length. */
static int fs_read_fd(int fd, size_t size, size_t max, char **data, size_t *len) {
  if (size > max) {
    close(fd);
    errno = EFBIG;
    return -1;
  }
  size_t cap = size + 1, n = 0;
  char *p = xmalloc(cap);
  for (;;) {
    if (n + 1 >= cap) {
      if (cap > max + 1) { /* past the limit (a file that grew while we read, a stream) */
        free(p);
        close(fd);
        errno = EFBIG;
        return -1;
      }
      cap *= 2;
      p = xrealloc(p, cap);
    }
    ssize_t r = read(fd, p + n, cap - n - 1);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(p);
      close(fd);
      errno = e;
      return -1;
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max) {
    free(p);
    errno = EFBIG;
    return -1;
  }
  p[n] = 0;
  *data = p;
  *len = n;
  return 0;
}

/* Opens path for fs_read_file (streams: also a pipe or a device); its size. */
static int fs_open_read(const char *path, int streams, size_t *size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  if (S_ISDIR(st.st_mode) || (!S_ISREG(st.st_mode) && !streams)) {
    close(fd);
    errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
    return -1;
  }
  *size = S_ISREG(st.st_mode) ? (size_t)st.st_size : 0;
  return fd;
}

int fs_read_file(const char *path, size_t max, char **data, size_t *len) {
  size_t size;
  int fd = fs_open_read(path, 0, &size);
  return fd < 0 ? -1 : fs_read_fd(fd, size, max, data, len);
}

int fs_read_stream(const char *path, size_t max, char **data, size_t *len) {
  size_t size;
  int fd = fs_open_read(path, 1, &size);
  return fd < 0 ? -1 : fs_read_fd(fd, size, max, data, len);
}

/* Whether path already holds exactly these bytes (then a rewrite is skipped). */
static int fs_same(const char *path, const void *data, size_t len) {
  struct stat st;
  if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != len) return 0;
  char *old;
  size_t n;
  if (fs_read_file(path, len, &old, &n) < 0) return 0;
  int same = n == len && memcmp(old, data, len) == 0;
  free(old);
  return same;
}

int fs_write_atomic(const char *path, const void *data, size_t len) {
  return fs_write_file(path, data, len, 1);
}

/* Write to a temporary name in the same folder, then rename: readers see the
   old file or the whole new one, never a partial one. With durable, the data
   reaches the disk before the rename (fsync); callers that write many files
   skip that and call fs_sync_dir once before the file that refers to them. */
int fs_write_file(const char *path, const void *data, size_t len, int durable) {
  if (!durable && fs_same(path, data, len)) return 0;
  static atomic_uint seq; /* threads of one process write distinct temporaries */
  char *tmp = NULL;
  int fd = -1;
  /* a fresh file only (O_EXCL, O_NOFOLLOW): a name planted in advance, a
     symbolic link above all, is never written through */
  for (int tries = 0; fd < 0 && tries < 16; tries++) {
    free(tmp);
    tmp = xasprintf("%s.tmp.%ld.%u", path, (long)getpid(), atomic_fetch_add(&seq, 1));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    free(tmp);
    return -1;
  }
  const char *p = data;
  size_t left = len;
  while (left) {
    ssize_t w = write(fd, p, left);
    if (w < 0) {
      if (errno == EINTR) continue;
      goto err;
    }
    p += w;
    left -= (size_t)w;
  }
  if (durable && fsync(fd) < 0) goto err;
  if (close(fd) < 0) {
    fd = -1;
    goto err;
  }
  fd = -1;
  if (rename(tmp, path) < 0) goto err;
  free(tmp);
  return 0;
err : {
  int e = errno;
  if (fd >= 0) close(fd);
  unlink(tmp);
  free(tmp);
  errno = e;
  return -1;
}
}

int fs_mkdirs(const char *path) {
  char *p = xstrdup(path);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0755) < 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
    *s = '/';
  }
  int r = mkdir(p, 0755);
  free(p);
  return (r < 0 && errno != EEXIST) ? -1 : 0;
}

int fs_exists(const char *path) { return access(path, F_OK) == 0; }

/* hkgen's data folders are found from the running binary, never from a path
   fixed at compile time, so that a build tree and an installed prefix (or a
   copy of either) both work: ENV when set, else the first of rels (relative
   to the binary's folder) holding marker. */
const char *fs_data_dir(const char *env, const char *marker, const char *const *rels, char *out,
                        size_t n) {
  const char *v = getenv(env);
  if (v && *v) {
    snprintf(out, n, "%s", v);
    return out;
  }
  char exe[4096];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (len <= 0) return NULL;
  exe[len] = 0;
  char *slash = strrchr(exe, '/');
  if (slash) *slash = 0;
  for (int i = 0; rels[i]; i++) {
    char *dir = xasprintf("%s/%s", exe, rels[i]), *cand = fs_join(dir, marker);
    int found = fs_exists(cand);
    if (found) snprintf(out, n, "%s", dir);
    free(dir);
    free(cand);
    if (found) return out;
  }
  return NULL;
}

char *fs_join(const char *dir, const char *name) {
  size_t n = strlen(dir);
  if (n && dir[n - 1] == '/') return xasprintf("%s%s", dir, name);
  return xasprintf("%s/%s", dir, name);
}

char *fs_dirname(const char *path) {
  const char *s = strrchr(path, '/');
  if (!s) return xstrdup(".");
  if (s == path) return xstrdup("/");
  char *d = xmalloc((size_t)(s - path) + 1);
  memcpy(d, path, (size_t)(s - path));
  d[s - path] = 0;
  return d;
}

int str_is_c_identifier(const char *s) {
  if (!s || !*s) return 0;
  if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))) return 0;
  for (s++; *s; s++)
    if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9')))
      return 0;
  return 1;
}

unsigned str_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 64 || lb > 64) return 1000;
  unsigned row[65];
  for (size_t j = 0; j <= lb; j++) row[j] = (unsigned)j;
  for (size_t i = 1; i <= la; i++) {
    unsigned prev = row[0];
    row[0] = (unsigned)i;
    for (size_t j = 1; j <= lb; j++) {
      unsigned cur = row[j];
      unsigned cost = (a[i - 1] | 32) == (b[j - 1] | 32) ? 0 : 1;
      unsigned v = prev + cost;
      if (row[j] + 1 < v) v = row[j] + 1;
      if (row[j - 1] + 1 < v) v = row[j - 1] + 1;
      row[j] = v;
      prev = cur;
    }
  }
  return row[lb];
}

/* The candidate nearest to word, or NULL when none is close enough to be a
   plausible typo. */
const char *str_closest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  unsigned bd = 1000;
  for (size_t i = 0; i < n; i++) {
    unsigned d = str_edit_distance(word, cands[i]);
    if (d < bd) {
      bd = d;
      best = cands[i];
    }
  }
  size_t wl = strlen(word);
  unsigned limit = wl <= 3 ? 1 : wl <= 6 ? 2 : 3;
  return bd <= limit ? best : NULL;
}

int fs_sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = syncfs(fd);
  close(fd);
  return rc;
}

static int fs_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  return remove(path);
}

int fs_remove_tree(const char *path) { return nftw(path, fs_remove_one, 16, FTW_DEPTH | FTW_PHYS); }

int fs_lock_folder(const char *dir) {
  char *p = fs_join(dir, ".hkgen.lock");
  int fd = -1;
  for (int tries = 0; tries < 8; tries++) {
    fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
      diag_error(dir, 0, 0, "%s", fd < 0 ? strerror(errno) : "another hkgen build or merge is writing this folder; wait for it");
      if (fd >= 0) close(fd);
      fd = -1;
      break;
    }
    /* the holder before us may have removed the file after we opened it:
       the lock counts only while the name is still the file we locked */
    struct stat a, b;
    if (fstat(fd, &a) == 0 && stat(p, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) break;
    close(fd);
    fd = -1;
  }
  free(p);
  return fd;
}

void fs_unlock_folder(const char *dir, int fd) {
  char *p = fs_join(dir, ".hkgen.lock");
  unlink(p); /* still held: no finished folder keeps a lock file */
  close(fd);
  free(p);
}

static const char *fs_tmp_root(void) {
  const char *tmp = getenv("TMPDIR");
  return tmp && *tmp ? tmp : "/tmp";
}

char *fs_tmp_template(const char *prefix) { return xasprintf("%s/%s.%ld.XXXXXX", fs_tmp_root(), prefix, (long)getpid()); }

/* hkgen.<pid>.XXXXXX (and hkgen-test., hkgen-m4.): the pid, or 0. */
static long fs_tmp_pid(const char *name) {
  static const char *const prefixes[] = {"hkgen.", "hkgen-test.", "hkgen-m4."};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(prefixes[i]);
    if (strncmp(name, prefixes[i], n)) continue;
    char *end;
    long pid = strtol(name + n, &end, 10);
    return pid > 0 && *end == '.' && strlen(end) == 7 ? pid : 0;
  }
  return 0;
}

void fs_sweep_tmp(void) {
  DIR *d = opendir(fs_tmp_root());
  if (!d) return;
  for (struct dirent *e; (e = readdir(d));) {
    long pid = fs_tmp_pid(e->d_name);
    struct stat st;
    char *p = pid ? fs_join(fs_tmp_root(), e->d_name) : NULL;
    /* only our own folders, of a process that is gone (a SIGKILL) */
    if (p && kill((pid_t)pid, 0) < 0 && errno == ESRCH && lstat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == getuid())
      fs_remove_tree(p);
    free(p);
  }
  closedir(d);
}

/* The watcher's SIGTERM (the thread that spawned it is gone: hkgen was
   killed): the whole process group goes, the program's own children (clang's
   -cc1, the linker) and the watcher with it. */
static void fs_watch_term(int sig) {
  (void)sig;
  kill(0, SIGKILL);
  _exit(128 + SIGTERM);
}

/* Closes every descriptor from 3 up but keep: a watcher does not exec, so it
   would hold other spawns' pipes open (O_CLOEXEC never fires) and their
   readers would wait for it. */
static void fs_close_from3(int keep) {
#ifdef SYS_close_range
  if ((keep <= 3 || syscall(SYS_close_range, 3u, (unsigned)keep - 1, 0u) == 0) &&
      syscall(SYS_close_range, (unsigned)keep + 1, ~0u, 0u) == 0)
    return;
#endif
  long max = sysconf(_SC_OPEN_MAX);
  for (long fd = 3; fd < (max > 0 && max < (1 << 20) ? max : 1 << 20); fd++)
    if (fd != keep) close((int)fd);
}

/* The watcher (fs_spawn's child, leading a process group of its own): runs
   argv in a grandchild and exits as it did; errors of the start go to ep. */
static void fs_watch(char *const argv[], const int fds[3], int ep, pid_t parent) {
  setpgid(0, 0); /* before the handler: kill(0) must never reach hkgen's group */
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = fs_watch_term;
  sigaction(SIGTERM, &sa, NULL);
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) _exit(127);
  int e = 0, st;
  for (int i = 0; i < 3 && !e; i++)
    if (dup2(fds[i], i) < 0) e = errno;
  fs_close_from3(ep);
  pid_t g = e ? -1 : fork();
  if (g == 0) {
    execvp(argv[0], argv);
    e = errno;
    if (write(ep, &e, sizeof e) < 0) _exit(126);
    _exit(127);
  }
  if (g < 0) {
    e = e ? e : errno;
    if (write(ep, &e, sizeof e) < 0) _exit(126);
    _exit(127);
  }
  close(ep); /* the grandchild's copy closes at its exec: EOF tells the start worked */
  while (waitpid(g, &st, 0) < 0)
    if (errno != EINTR) _exit(127);
  if (WIFEXITED(st)) _exit(WEXITSTATUS(st));
  signal(WTERMSIG(st), SIG_DFL); /* the same death for the caller's waitpid */
  kill(getpid(), WTERMSIG(st));
  _exit(128 + WTERMSIG(st));
}

int fs_spawn(char *const argv[], const int fds[3], pid_t *pid) {
  int ep[2]; /* the program's exec errno, if its start fails; closed by exec */
  if (pipe2(ep, O_CLOEXEC) < 0) return errno;
  pid_t parent = getpid(), p = fork();
  if (p < 0) {
    int e = errno;
    close(ep[0]);
    close(ep[1]);
    return e;
  }
  if (p == 0) fs_watch(argv, fds, ep[1], parent);
  close(ep[1]);
  int e = 0;
  ssize_t r;
  while ((r = read(ep[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(ep[0]);
  if (r == (ssize_t)sizeof e) {
    while (waitpid(p, NULL, 0) < 0 && errno == EINTR) {
    }
    return e;
  }
  *pid = p;
  return 0;
}
