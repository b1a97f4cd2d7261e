/* What a process asks libc about itself and its files at start-up (GNU make does all of it):
 * inherited signal dispositions, the blocked set, descriptor flags, the working directory,
 * strdup'd copies it frees, error texts, file status. One byte of stdin picks what it changes. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void on_term(int sig) { (void)sig; }

int main(void) {
    unsigned char b;
    if (read(0, &b, 1) != 1)
        return 9;
    struct sigaction act, old;
    sigaction(SIGINT, NULL, &old);                    /* GNU style: keep an ignored signal ignored */
    char inherited = old.sa_handler == SIG_IGN ? 'I' : old.sa_handler == SIG_DFL ? 'D' : '?';
    if (b & 1) {
        memset(&act, 0, sizeof act);
        act.sa_handler = SIG_IGN;
        sigaction(SIGHUP, &act, NULL);
    }
    sigaction(SIGHUP, NULL, &old);
    char hup = old.sa_handler == SIG_IGN ? 'I' : 'D';
    int sig_ok = signal(SIGTERM, on_term) == SIG_DFL && signal(SIGTERM, SIG_DFL) == on_term;
    sigset_t set, cur;
    sigemptyset(&set);
    if (b & 2)
        sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigprocmask(SIG_BLOCK, NULL, &cur);
    int blocked = sigismember(&cur, SIGUSR1);

    int fd_ok = fcntl(0, F_GETFD) == 0 && (fcntl(1, F_GETFL) & O_ACCMODE) == O_WRONLY
                && fcntl(1, F_SETFD, FD_CLOEXEC) == 0 && fcntl(1, F_GETFD) == FD_CLOEXEC;
    errno = 0;
    int bad = fcntl(77, F_GETFD) == -1 && errno == EBADF;
    int dup = fcntl(2, F_DUPFD, 10) >= 10;

    char *cwd = getcwd(NULL, 0);
    int cwd_ok = cwd != NULL && cwd[0] == '/';
    free(cwd);
    char *copy = strdup(b & 4 ? "four" : "none");
    char *part = strndup(copy, 2);
    struct stat st;
    errno = 0;
    int missing = stat("no-such-file", &st) == -1 && errno == ENOENT;
    int dir = stat(".", &st) == 0 && S_ISDIR(st.st_mode) && access(".", F_OK) == 0;
    umask(077);
    int mask = umask(022) == 077;
    printf("%c%c%d%d|%d%d%d|%d%d|%s|%s|%d%d%d|%s\n", inherited, hup, sig_ok, blocked, fd_ok, bad, dup,
           cwd_ok, (int)strlen(copy), copy, part, missing, dir, mask, strerror(ENOENT));
    free(part);
    free(copy);
    return b & 3;
}
