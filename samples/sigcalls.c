/* Start-up calls of GNU programs that angr stubs: strsignal (m4 names SIGSEGV's description),
 * isatty, the sigset_t functions, lseek and fstat of stdin. One byte of stdin picks a signal. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(void) {
    unsigned char b;
    if (read(0, &b, 1) != 1)
        return 9;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, (b & 7) + 1);
    sigaddset(&set, SIGSEGV);
    sigdelset(&set, SIGSEGV);
    int r = sigismember(&set, 3) + 2 * sigismember(&set, SIGSEGV);
    printf("%s|%s|%d\n", strsignal(SIGSEGV), strsignal(40), isatty(1));
    return r;
}
