/* An LD_PRELOAD shim that logs, in call order, every kill(2), waitid(2) and
 * waitpid(2) this process makes, with their results, to the file named by
 * SIGNAL_LOG, each line prefixed with the caller's pid (one line each: "kill <pid> <sig> <rc>", "waitid <idtype> <id>
 * <flags> <rc> <si_pid>", "waitpid <pid> <options> <rc>"). The lifecycle test
 * reads it to check that no process group is signalled after its leader was
 * reaped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void log_line(const char *line) {
  const char *path = getenv("SIGNAL_LOG");
  if (!path) return;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return;
  ssize_t unused = write(fd, line, strlen(line));
  (void)unused;
  close(fd);
}

int kill(pid_t pid, int sig) {
  static int (*real)(pid_t, int);
  if (!real) real = (int (*)(pid_t, int))dlsym(RTLD_NEXT, "kill");
  int rc = real(pid, sig);
  char line[96];
  snprintf(line, sizeof line, "%d kill %d %d %d\n", (int)getpid(), (int)pid, sig, rc);
  log_line(line);
  return rc;
}

int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options) {
  static int (*real)(idtype_t, id_t, siginfo_t *, int);
  if (!real) real = (int (*)(idtype_t, id_t, siginfo_t *, int))dlsym(RTLD_NEXT, "waitid");
  int rc = real(idtype, id, info, options);
  char line[128];
  snprintf(line, sizeof line, "%d waitid %d %d %d %d %d\n", (int)getpid(), (int)idtype, (int)id, options, rc, rc == 0 && info ? (int)info->si_pid : 0);
  log_line(line);
  return rc;
}

pid_t waitpid(pid_t pid, int *status, int options) {
  static pid_t (*real)(pid_t, int *, int);
  if (!real) real = (pid_t (*)(pid_t, int *, int))dlsym(RTLD_NEXT, "waitpid");
  pid_t rc = real(pid, status, options);
  char line[96];
  snprintf(line, sizeof line, "%d waitpid %d %d %d\n", (int)getpid(), (int)pid, options, (int)rc);
  log_line(line);
  return rc;
}
