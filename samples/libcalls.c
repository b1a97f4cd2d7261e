/* libc calls that angr has no model of (or a placeholder for), as libraries make them:
 * strspn/strcspn/strpbrk and strchr/strlen from a pointer an input byte moves (buf + strspn(buf,
 * " ")), vsnprintf/vfprintf of a message (truncated), and a lock taken through a weak
 * pthread reference (libxml2's threads.c). Two bytes of stdin; stdout and the exit code show the
 * results. */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#pragma weak pthread_mutex_init
#pragma weak pthread_mutex_lock
#pragma weak pthread_mutex_unlock

static pthread_mutex_t lock;

static int message(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return r;
}

static void say(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stdout, fmt, ap);
    va_end(ap);
}

int main(void) {
    char in[3] = {0, 0, 0};
    if (read(0, in, 2) != 2)
        return 100;
    char *buf = malloc(8);
    buf[0] = ' ';
    buf[1] = in[0];
    buf[2] = in[1];
    buf[3] = ':';
    buf[4] = 'x';
    buf[5] = 0;
    char *word = buf + strspn(buf, " ab");                /* a pointer the input moves */
    size_t head = strcspn(word, ":b");
    char *colon = strchr(word, ':');
    char *mark = strpbrk(buf, "b:");
    int r = (int)head;                                     /* 0..3 */
    r |= (colon ? (int)(colon - buf) : 7) << 2;            /* 3 unless a byte is ':' */
    r |= (mark && *mark == 'b') << 5;
    if (pthread_mutex_init && pthread_mutex_init(&lock, NULL) == 0) {
        pthread_mutex_lock(&lock);
        r |= 64;
        pthread_mutex_unlock(&lock);
    }
    char msg[4];
    int full = message(msg, sizeof msg, "%zu/%d/%s", strlen(word), in[0] == 'a', in[1] == 'b' ? "bb" : "c");
    say("[%s] %d %d\n", msg, full, (int)(word - buf));
    free(buf);
    return r;
}
