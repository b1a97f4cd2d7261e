/* Values that reach a branch through the operating system rather than through variables, in
   the style of the logic-bomb benchmark's "covert propagation" and "parallel" categories (written
   from their public descriptions): byte 0 picks the channel, byte 1 is the payload. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t seen;
static void on_signal(int s) { seen = s; }

static void *thread_main(void *arg) {
    int c = *(char *)arg;
    return (void *)(long)(c == 'x' ? 41 : c + 1);
}

static int through_file(int c) {
    char name[64];
    snprintf(name, sizeof name, "/tmp/angr-ram-covert-%d", (int)getpid());
    FILE *f = fopen(name, "w");
    if (!f) return -1;
    fprintf(f, "%d\n", c);
    fclose(f);
    f = fopen(name, "r");
    int d = -1;
    if (!f || fscanf(f, "%d", &d) != 1) d = -2;
    if (f) fclose(f);
    unlink(name);
    return d;
}

static int through_pipe(int c) {
    int fd[2];
    char b = (char)c, d = 0;
    if (pipe(fd)) return -1;
    if (write(fd[1], &b, 1) != 1 || read(fd[0], &d, 1) != 1) return -2;
    close(fd[0]);
    close(fd[1]);
    return d;
}

int main(void) {
    char in[2];
    if (fread(in, 1, 2, stdin) != 2) return 2;
    int v = -100;
    switch (in[0]) {
    case 'f': v = through_file(in[1]); break;
    case 'p': v = through_pipe(in[1]); break;
    case 's':
        signal(SIGUSR1, on_signal);
        if (in[1] == 'x') raise(SIGUSR1);
        v = seen == SIGUSR1 ? 'x' : 0;
        break;
    case 'k': {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_signal;
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGUSR2, &sa, NULL);
        if (in[1] != 0) kill(getpid(), SIGUSR2);
        if (in[1] == 'x') kill(getpid(), SIGUSR2);   /* the default action now: the process dies */
        v = seen == SIGUSR2 ? 'y' : 0;
        break;
    }
    case 't': {
        pthread_t t;
        void *r;
        if (pthread_create(&t, NULL, thread_main, &in[1]) || pthread_join(t, &r)) return 3;
        v = (int)(long)r;
        break;
    }
    default: break;
    }
    if (v == 'x' || v == 41) { printf("bomb %c\n", in[0]); return 1; }
    printf("%c %d\n", in[0], v);
    return 0;
}
