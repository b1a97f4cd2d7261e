/* A child process that may crash (a NULL dereference or an abort, chosen by the input); its
 * parent reports how the child ended. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
    char c;
    if (read(0, &c, 1) != 1)
        return 9;
    pid_t kid = fork();
    if (kid == 0) {
        if (c == 'n') {
            volatile int *p = NULL;
            *p = 1;
        }
        if (c == 'a')
            abort();
        exit(c == 'e' ? 3 : 0);
    }
    int st = 0;
    waitpid(kid, &st, 0);
    if (WIFSIGNALED(st))
        printf("signal %d\n", WTERMSIG(st));
    else
        printf("exit %d\n", WEXITSTATUS(st));
    return 0;
}
