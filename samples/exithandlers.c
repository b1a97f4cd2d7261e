/* Exit handlers as C11 7.22.4 describes them: exit() and the return from main run the functions
 * registered with atexit in the reverse order of their registration, once per registration;
 * glibc's on_exit handlers also get the status; _exit runs none, and a handler may end the
 * process itself; quick_exit runs only those at_quick_exit registered. Which handlers are
 * registered and how main ends depend on three input bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void first(void) { puts("first"); }
static void second(void) { puts("second"); }
static void status_seen(int status, void *arg) { printf("on_exit %d %s\n", status, (const char *)arg); }
static void quits(void) { fflush(stdout); _exit(7); }
static void quick(void) { puts("quick"); fflush(stdout); }   /* quick_exit flushes no stream */

/* a function of its own, so that a run can merge the states leaving it */
__attribute__((noinline)) static void register_handlers(const char *buf) {
    atexit(first);
    if (buf[0] == 'a')
        atexit(second);
    if (buf[0] == 'b') {
        atexit(second);
        atexit(second);
    }
    if (buf[1] == 'o')
        on_exit(status_seen, "arg");
    if (buf[1] == 'q')
        atexit(quits);
    at_quick_exit(quick);
}

int main(void) {
    char buf[4] = {0};
    if (read(0, buf, 3) < 0)
        return 2;
    register_handlers(buf);
    switch (buf[2]) {
    case 'x':
        exit(3);
    case '_':
        fflush(stdout);
        _exit(4);
    case 'r':
        return 5;
    case 'k':
        quick_exit(6);
    }
    puts("main");
    return 0;
}
