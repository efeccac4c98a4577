/* unit_fswrite.c: fs_write_file never writes through a name planted at its
   temporary path (a symbolic link to a victim file), and still writes the
   file; fs_lock_folder refuses a second holder and leaves no lock file. */
#include <sys/stat.h>

#include "../../gen/util.h"
#include "testlib.h"

static char *slurp(const char *path) {
  char *t = NULL;
  size_t n = 0;
  return fs_read_file(path, 1 << 20, &t, &n) == 0 ? t : NULL;
}

int main(void) {
  char dir[] = "/tmp/unit_fswrite.XXXXXX";
  if (!mkdtemp(dir)) t_die("mkdtemp");
  char *victim = xasprintf("%s/victim", dir), *path = xasprintf("%s/out.json", dir);
  T_CHECK(fs_write_file(victim, "keep", 4, 0) == 0, "write the victim");
  /* this process's first temporaries: out.json.tmp.<pid>.0 onwards */
  for (int i = 0; i < 4; i++) {
    char *tmp = xasprintf("%s.tmp.%ld.%d", path, (long)getpid(), i);
    T_CHECK(symlink(victim, tmp) == 0, "plant %s", tmp);
    free(tmp);
  }
  T_CHECK(fs_write_file(path, "new", 3, 0) == 0, "the write went through a fresh name");
  char *v = slurp(victim), *o = slurp(path);
  T_CHECK(v && !strcmp(v, "keep"), "the victim was written through: %s", v ? v : "(gone)");
  T_CHECK(o && !strcmp(o, "new"), "the file holds %s", o ? o : "(nothing)");
  struct stat st;
  T_CHECK(lstat(path, &st) == 0 && S_ISREG(st.st_mode), "out.json is a regular file");
  int fd = fs_lock_folder(dir);
  T_CHECK(fd >= 0, "the first lock");
  diag_set_quiet(1);
  int fd2 = fs_lock_folder(dir);
  T_CHECK(fd2 < 0, "a second holder got the lock");
  fs_unlock_folder(dir, fd);
  char *lock = xasprintf("%s/.hkgen.lock", dir);
  T_CHECK(access(lock, F_OK) != 0, "the lock file stays after unlock");
  int fd3 = fs_lock_folder(dir);
  T_CHECK(fd3 >= 0, "the lock after a release");
  fs_unlock_folder(dir, fd3);
  free(v);
  free(o);
  free(lock);
  free(victim);
  free(path);
  fs_remove_tree(dir);
  printf("unit_fswrite: %d checks, %d failed\n", t_checks, t_failures);
  return t_failures != 0;
}
