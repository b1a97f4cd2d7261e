/* Reports through BSD's <err.h>: errx and err end the program with a status, warnx and warn
 * write to stderr and return; a report through verrx from a variadic helper. Reads four bytes. */
#include <err.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static void die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrx(code, fmt, ap);
}

static int digit(char c) { return c >= '0' && c <= '9'; }

int main(void)
{
    char buf[8] = {0};
    ssize_t n = read(0, buf, 4);
    if (n < 4)
        errx(2, "short input (%zd bytes)", n);
    if (!digit(buf[0]))
        errx(3, "not a number: %c", buf[0]);
    int v = (buf[0] - '0') * 10 + (digit(buf[1]) ? buf[1] - '0' : 0);
    if (buf[2] == '!') {
        errno = EINVAL;
        err(4, "value %d", v);
    }
    if (buf[3] == '#')
        die(6, "hash after %d", v);
    if (v > 50)
        warnx("large value %d", v);
    if (buf[2] == '?') {
        errno = ERANGE;
        warn("checking %d", v);
        printf("warned %s\n", v > 50 ? "big" : "small");
        return 5;
    }
    printf("%s %d\n", v > 50 ? "big" : "small", buf[1] == '!');
    return 0;
}
