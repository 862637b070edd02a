/* Fault injection for the e2e tests: loaded with LD_PRELOAD, makes every write(2) and writev(2) to a
 * file whose path ends with $KEF_TEST_ENOSPC fail with ENOSPC, as a full disk does, while every other
 * file is written normally. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int is_target(int fd) {
  const char* suffix = getenv("KEF_TEST_ENOSPC");
  if (!suffix || !*suffix || fd <= 2) return 0;
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t len = readlink(link, path, sizeof path - 1);
  if (len <= 0) return 0;
  path[len] = '\0';
  size_t s = strlen(suffix);
  return (size_t)len >= s && strcmp(path + len - s, suffix) == 0;
}

ssize_t write(int fd, const void* buf, size_t n) {
  static ssize_t (*real)(int, const void*, size_t);
  if (!real) real = (ssize_t(*)(int, const void*, size_t))dlsym(RTLD_NEXT, "write");
  if (n > 0 && is_target(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, n);
}

ssize_t writev(int fd, const struct iovec* iov, int count) {
  static ssize_t (*real)(int, const struct iovec*, int);
  if (!real) real = (ssize_t(*)(int, const struct iovec*, int))dlsym(RTLD_NEXT, "writev");
  if (count > 0 && is_target(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, iov, count);
}
