/* Work done in child processes: a child reads the first input byte (the descriptor's offset is
 * shared with its parent) and exits with a code the parent reaps with waitpid; a grandchild
 * computes from the second byte and sends the result up a pipe; wait() with no child left fails. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int classify(unsigned char c)
{
    return c >= '0' && c <= '9' ? 1 : c >= 'a' && c <= 'z' ? 2 : 3;
}

int main(void)
{
    int fds[2], status = 0;
    if (pipe(fds) != 0)
        return 9;
    pid_t kid = fork();
    if (kid < 0)
        return 8;
    if (kid == 0) {
        unsigned char c;
        if (read(0, &c, 1) != 1)
            _exit(0);
        pid_t grandkid = fork();
        if (grandkid == 0) {
            unsigned char d;
            int v = read(0, &d, 1) == 1 ? (d - '0') * 7 : -1;
            write(fds[1], &v, sizeof v);
            exit(0);
        }
        waitpid(grandkid, NULL, 0);
        exit(classify(c));
    }
    close(fds[1]);
    if (waitpid(kid, &status, 0) != kid || !WIFEXITED(status))
        return 7;
    int v = 0;
    ssize_t got = read(fds[0], &v, sizeof v);
    unsigned char rest;
    ssize_t more = read(0, &rest, 1);
    int again = wait(NULL);
    printf("class %d value %s%d more %zd%s\n", WEXITSTATUS(status), got == (ssize_t)sizeof v ? "" : "none ",
           v > 40 ? 1 : v, more, again == -1 && errno == ECHILD ? "" : " child?");
    if (WEXITSTATUS(status) == 1 && v == 49 && more == 1 && rest == '!')
        return 3;
    return 0;
}
